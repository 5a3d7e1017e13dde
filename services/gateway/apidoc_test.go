package gateway

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/metrics"
)

// TestAPIDocListsEveryRoute compares the route index of docs/api.md with the router, both
// ways.
func TestAPIDocListsEveryRoute(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, index, ok := strings.Cut(string(doc), "## Route index")
	if !ok {
		t.Fatal(`docs/api.md has no "## Route index" section`)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z]+ /[^`]*)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(index, -1) {
		documented = append(documented, m[1])
	}
	s := &Service{deps: Deps{Metrics: metrics.New("gateway", "apidoc-test")}}
	var router []string
	for _, rt := range s.routeTable() {
		router = append(router, rt.pattern)
	}
	for _, p := range router {
		if !slices.Contains(documented, p) {
			t.Errorf("route %q is registered but missing from docs/api.md's route index", p)
		}
	}
	for _, p := range documented {
		if !slices.Contains(router, p) {
			t.Errorf("docs/api.md lists %q, which the router does not register", p)
		}
	}
}
