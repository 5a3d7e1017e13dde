package gateway

import (
	"net/http"

	"github.com/membus/membus/schemas"
)

// openapi serves schemas/openapi.yaml, the document of every route (a test keeps it equal to
// the router).
func (s *Service) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(schemas.OpenAPI)
}
