package model

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/e-agent/e/internal/providermock"
)

// BenchmarkStream streams answers of 500, 5,000 and 50,000 text deltas from
// a loopback server of each provider API and reports the cost per delta:
// it stays flat with the size when nothing on the path is quadratic.
func BenchmarkStream(b *testing.B) {
	news := map[string]func(ProviderSettings) Provider{
		APIOpenAIResponses: NewOpenAIResponses, APIOpenAIChat: NewOpenAIChat, APIAnthropic: NewAnthropic,
	}
	for _, api := range providermock.APIs {
		for _, n := range []int{500, 5000, 50000} {
			b.Run(api+"/"+strconv.Itoa(n), func(b *testing.B) {
				srv := httptest.NewServer(providermock.NewServer(api, n))
				defer srv.Close()
				p := news[api](ProviderSettings{BaseURL: srv.URL, Client: srv.Client(), APIKey: "k"})
				req := &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "hi"}}}}}
				b.ReportAllocs()
				for b.Loop() {
					deltas := 0
					resp, err := p.Stream(context.Background(), req, func(Delta) { deltas++ })
					if err != nil || deltas != n {
						b.Fatalf("%d deltas, %v", deltas, err)
					}
					if got, want := len(resp.Message.Text()), len(providermock.Delta(n-1))*n; got > want {
						b.Fatalf("answer of %d bytes", got)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delta")
			})
		}
	}
}
