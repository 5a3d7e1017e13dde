package gateway

import (
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/schemas"
)

// TestOpenAPIMatchesTheRouter fails when schemas/openapi.yaml and the router disagree: every
// registered pattern is documented, every documented operation is registered, and the mux
// really routes each documented operation to its pattern.
func TestOpenAPIMatchesTheRouter(t *testing.T) {
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(schemas.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") || len(doc.Paths) == 0 {
		t.Fatalf("openapi.yaml has openapi %q and %d paths", doc.OpenAPI, len(doc.Paths))
	}
	var spec []string
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete", "head", "options":
				spec = append(spec, strings.ToUpper(method)+" "+path)
			}
		}
	}
	s := &Service{deps: Deps{Metrics: metrics.New("gateway", "openapi-test")}}
	s.mux = s.routes()
	var router []string
	for _, rt := range s.routeTable() {
		router = append(router, rt.pattern)
	}
	slices.Sort(spec)
	slices.Sort(router)
	for _, p := range router {
		if !slices.Contains(spec, p) {
			t.Errorf("route %q is registered but not in schemas/openapi.yaml", p)
		}
	}
	for _, p := range spec {
		if !slices.Contains(router, p) {
			t.Errorf("schemas/openapi.yaml documents %q, which the router does not register", p)
		}
	}
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	for _, p := range spec {
		method, path, _ := strings.Cut(p, " ")
		req := httptest.NewRequest(method, param.ReplaceAllString(path, "x-1"), nil)
		if _, got := s.mux.Handler(req); got != p {
			t.Errorf("%s %s is routed to %q, want %q", method, req.URL.Path, got, p)
		}
	}
}
