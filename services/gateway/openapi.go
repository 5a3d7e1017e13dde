package gateway

import (
	"net/http"

	"github.com/membus/membus/schemas"
)

// openapi serves schemas/openapi.yaml, the document of every route (a test keeps it equal to
// the router), with the bus payload schemas it references bundled in (openapi_bundle.go).
func (s *Service) openapi(w http.ResponseWriter, _ *http.Request) {
	doc, err := openAPIDocument()
	if err != nil {
		s.log.Error("openapi bundle", "error", err.Error())
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(schemas.OpenAPI)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(doc)
}
