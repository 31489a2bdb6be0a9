package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"

	"github.com/e-agent/e/internal/providermock"
)

// mock serves one provider API's answers on loopback until killed, for
// trying an agent by hand: it prints its base URL.
func mock(fs *flag.FlagSet, args []string) error {
	api := fs.String("api", "openai-responses", "provider API")
	n := fs.Int("n", 500, "deltas per answer")
	fs.Parse(args)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	return http.Serve(ln, providermock.NewServer(*api, *n))
}
