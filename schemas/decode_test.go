package schemas

import (
	"strings"
	"testing"
)

// V3, 12.7d: integers written 2.0 or 1e2 are integers (JSON Schema) and
// decode as such; values Go cannot hold get an error naming the field,
// never Go's own json: wording; duplicate keys one V3 line.
func TestDecode(t *testing.T) {
	type params struct {
		Ask   int64   `json:"ask"`
		Inner *params `json:"inner"`
	}
	tests := []struct {
		name, params string
		wantAsk      int64
		wantErr      string
	}{
		{name: "plain", params: `{"ask":3}`, wantAsk: 3},
		{name: "written 3.0", params: `{"ask":3.0}`, wantAsk: 3},
		{name: "written 3e0", params: `{"ask":3e0}`, wantAsk: 3},
		{name: "written 30e-1", params: `{"ask":30e-1}`, wantAsk: 3},
		{name: "negative zero", params: `{"ask":-0.0}`, wantAsk: 0},
		{name: "too large", params: `{"ask":1e30}`, wantErr: "ask: 1e30 does not fit in int64"},
		{name: "nested field", params: `{"inner":{"ask":1e30}}`, wantErr: "inner.ask: 1e30 does not fit in int64"},
		{name: "a fraction", params: `{"ask":1.5}`, wantErr: "ask: 1.5 does not fit in int64"},
		{name: "wrong type", params: `{"ask":"x"}`, wantErr: "ask: a string cannot be held as int64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p params
			err := Decode([]byte(tt.params), &p)
			switch {
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case p.Ask != tt.wantAsk:
				t.Errorf("ask = %d, want %d", p.Ask, tt.wantAsk)
			}
			if err != nil && strings.Contains(err.Error(), "json:") {
				t.Errorf("Go's wording leaked: %v", err)
			}
		})
	}
}

func TestDuplicateKeys(t *testing.T) {
	for _, tt := range []struct{ params, want string }{
		{`{"ask":true,"ask":false}`, "hello: params.ask: appears twice in one object"},
		{`{"ask":true,"x":{"a":1,"b":[{"k":1,"k":2}]}}`, "hello: params.x.b[0].k: appears twice"},
		{`{"ask":true,"x":{"a b":{},"a b":1}}`, `hello: params.x["a b"]: appears twice`},
	} {
		err := ValidateParams("hello", []byte(tt.params))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateParams(%s) = %v, want %q", tt.params, err, tt.want)
		}
	}
}
