package gateway

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"gopkg.in/yaml.v3"

	"github.com/membus/membus/schemas"
)

// TestOpenAPIIsSelfContainedAndValid validates the served document (the bundle) with a
// standard OpenAPI 3.1 validator (pb33f/libopenapi-validator, which checks the document
// against the OpenAPI schema) and fails on any $ref that leaves the document.
func TestOpenAPIIsSelfContainedAndValid(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`\$ref: *['"]?([^'"\s]+)`).FindAllSubmatch(doc, -1)
	if len(refs) == 0 {
		t.Fatal("no $ref at all: the bundle lost the document")
	}
	var ext int
	for _, m := range refs {
		if !strings.HasPrefix(string(m[1]), "#/components/") {
			t.Errorf("$ref %s leaves the document", m[1])
			ext++
		}
	}
	// Every internal reference resolves.
	var tree map[string]any
	if err := yaml.Unmarshal(doc, &tree); err != nil {
		t.Fatal(err)
	}
	for _, m := range refs {
		path := strings.Split(strings.TrimPrefix(string(m[1]), "#/"), "/")
		var n any = tree
		for _, p := range path {
			mm, ok := n.(map[string]any)
			if !ok {
				n = nil
				break
			}
			n = mm[p]
		}
		if n == nil {
			t.Errorf("$ref %s resolves to nothing", m[1])
		}
	}

	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatalf("libopenapi: %v", err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	ok, verrs := v.ValidateDocument()
	for _, e := range verrs {
		t.Errorf("openapi: %s: %s (line %d)", e.Message, e.Reason, e.SpecLine)
		for _, se := range e.SchemaValidationErrors {
			t.Errorf("  %s at %s", se.Reason, se.FieldPath)
		}
	}
	if !ok && len(verrs) == 0 {
		t.Error("the validator rejects the document without saying why")
	}
	if !bytes.Contains(schemas.OpenAPI, []byte(schemaBaseURL)) {
		t.Log("the source no longer references schemas by $id: the bundle step may be dropped")
	}
}

func TestBundleRefusesAnUnknownRemoteRef(t *testing.T) {
	src := []byte("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n    A:\n      $ref: https://example.com/x.json\n")
	if _, err := bundleOpenAPI(src, schemas.JSON.ReadFile); err == nil {
		t.Error("a $ref to another host was bundled")
	}
}
