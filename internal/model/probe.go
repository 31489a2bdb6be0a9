package model

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// probeTimeout bounds one provider's probe.
const probeTimeout = 15 * time.Second

// Probe asks provider name for its models list (GET {base_url}/models, and
// /v1/models for the Anthropic API) with its key: one cheap call that
// checks the address, the key and that something answers, without
// spending tokens (e doctor --probe). A provider that answers but has no
// such list (404, 405: some local servers) is reachable, which is all the
// probe can say; nil then too. Failures are *Error values as a model
// call's are (status, request id, the key's variable on a 401), or the
// reason no call was made (no key set).
func (c *Catalog) Probe(ctx context.Context, name string) error {
	pc, ok := c.providers[name]
	if !ok {
		return fmt.Errorf("model: probe: no provider %q", name)
	}
	s := ProviderSettings{Name: name, BaseURL: pc.BaseURL, Client: c.client, StallTimeout: probeTimeout}
	if pc.APIKeyEnv != "" {
		s.APIKey, s.KeyEnv = c.getenv(pc.APIKeyEnv), pc.APIKeyEnv
		if s.APIKey == "" {
			return fmt.Errorf("model: probe %s: %s is not set", name, pc.APIKeyEnv)
		}
	}
	p := newHTTPProvider(s, name, pc.BaseURL)
	path, header := "/models", openAIHeader(p.key)
	if pc.API == APIAnthropic {
		path, header = "/v1/models", http.Header{}
		header.Set("anthropic-version", "2023-06-01")
		if p.key != "" {
			header.Set("x-api-key", p.key)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c0 := &call{p: &p, model: "", parent: ctx, ctx: ctx}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.baseURL+path, nil)
	if err != nil {
		return c0.fail("connect", false, "", "build request: "+err.Error(), err)
	}
	req.Header = header
	resp, err := p.client.Do(req)
	if err != nil {
		return c0.fail("connect", false, "", strings.TrimSpace(redactSecrets(err.Error(), p.key)), err)
	}
	defer resp.Body.Close()
	c0.reqID = c0.field(cmp.Or(resp.Header.Get("x-request-id"), resp.Header.Get("request-id")))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299,
		resp.StatusCode == http.StatusNotFound, resp.StatusCode == http.StatusMethodNotAllowed:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	c0.body = resp.Body
	e := c0.statusErr(resp)
	e.Model = name
	return e
}
