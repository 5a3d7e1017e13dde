package gateway

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/membus/membus/schemas"
)

// schemaBaseURL is the $id base of the JSON Schemas in schemas/: the source document refers to
// the bus payloads by it, and bundleOpenAPI replaces each such reference by a component.
const schemaBaseURL = "https://membus.dev/schemas/"

var (
	bundleOnce sync.Once
	bundled    []byte
	bundleErr  error
)

// openAPIDocument is the self-contained OpenAPI document served at /openapi.yaml: the source
// schemas/openapi.yaml with every JSON Schema it references by $id (and the ones those
// reference) copied into components/schemas, so no $ref leaves the document. Built once from
// the embedded files.
func openAPIDocument() ([]byte, error) {
	bundleOnce.Do(func() { bundled, bundleErr = bundleOpenAPI(schemas.OpenAPI, schemas.JSON.ReadFile) })
	return bundled, bundleErr
}

// bundleOpenAPI inlines the external schema references of doc. A file F.schema.json becomes
// the component Camel(F) (recall_response → RecallResponse) and each of its $defs the
// component Camel(F)_<def>; the references inside the copied schemas are rewritten to match,
// and their $schema, $id and $defs keywords dropped.
func bundleOpenAPI(doc []byte, read func(name string) ([]byte, error)) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	if len(root.Content) != 1 {
		return nil, fmt.Errorf("openapi.yaml: not one document")
	}
	compSchemas := mapPath(root.Content[0], "components", "schemas")
	if compSchemas == nil {
		return nil, fmt.Errorf("openapi.yaml: no components/schemas")
	}
	existing := map[string]bool{}
	for i := 0; i+1 < len(compSchemas.Content); i += 2 {
		existing[compSchemas.Content[i].Value] = true
	}
	b := &bundler{read: read, added: map[string]bool{}, existing: existing}
	if err := b.rewrite(root.Content[0], ""); err != nil {
		return nil, err
	}
	for len(b.queue) > 0 {
		file := b.queue[0]
		b.queue = b.queue[1:]
		if err := b.add(file); err != nil {
			return nil, err
		}
	}
	sort.Slice(b.out, func(i, j int) bool { return b.out[i].name < b.out[j].name })
	for _, c := range b.out {
		compSchemas.Content = append(compSchemas.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: c.name}, c.node)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, err
	}
	_ = enc.Close()
	return buf.Bytes(), nil
}

type bundler struct {
	read     func(string) ([]byte, error)
	added    map[string]bool // schema files queued or copied
	existing map[string]bool // component names of the source document
	queue    []string
	out      []component
}

type component struct {
	name string
	node *yaml.Node
}

// componentName is the component of a schema file and, when def is set, of one of its $defs.
func componentName(file, def string) string {
	stem := strings.TrimSuffix(file, ".schema.json")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(stem, func(r rune) bool { return r == '_' || r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	if def != "" {
		b.WriteString("_" + def)
	}
	return b.String()
}

// rewrite replaces every $ref under n that names a schema file (by $id URL or, inside a copied
// schema whose file is from, by relative name or #/$defs/…) with a component reference, and
// queues the files it names.
func (b *bundler) rewrite(n *yaml.Node, from string) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "$ref" && v.Kind == yaml.ScalarNode {
				ref, err := b.target(v.Value, from)
				if err != nil {
					return err
				}
				v.Value, v.Style = ref, 0
				continue
			}
			if err := b.rewrite(v, from); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range n.Content {
		if err := b.rewrite(c, from); err != nil {
			return err
		}
	}
	return nil
}

func (b *bundler) target(ref, from string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "#/components/"):
		return ref, nil
	case strings.HasPrefix(ref, schemaBaseURL):
		ref = strings.TrimPrefix(ref, schemaBaseURL)
	case strings.HasPrefix(ref, "#/$defs/") && from != "":
		ref = from + ref
	case strings.HasPrefix(ref, "#"):
		return "", fmt.Errorf("openapi bundle: local $ref %q outside components", ref)
	case strings.Contains(ref, "://"):
		return "", fmt.Errorf("openapi bundle: $ref %q is not one of schemas/", ref)
	}
	file, frag, _ := strings.Cut(ref, "#")
	def := ""
	if frag != "" {
		var ok bool
		if def, ok = strings.CutPrefix(frag, "/$defs/"); !ok || strings.Contains(def, "/") {
			return "", fmt.Errorf("openapi bundle: $ref %q: only #/$defs/<name> fragments are bundled", ref)
		}
	}
	if !b.added[file] {
		b.added[file] = true
		b.queue = append(b.queue, file)
	}
	return "#/components/schemas/" + componentName(file, def), nil
}

// add copies one schema file and its $defs into the components.
func (b *bundler) add(file string) error {
	data, err := b.read(file)
	if err != nil {
		return fmt.Errorf("openapi bundle: %s: %w", file, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("openapi bundle: %s: %w", file, err)
	}
	node := doc.Content[0]
	if err := b.rewrite(node, file); err != nil {
		return err
	}
	var kept []*yaml.Node
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		switch k.Value {
		case "$schema", "$id":
			continue
		case "$defs":
			for j := 0; j+1 < len(v.Content); j += 2 {
				if err := b.put(componentName(file, v.Content[j].Value), v.Content[j+1]); err != nil {
					return err
				}
			}
			continue
		}
		kept = append(kept, k, v)
	}
	node.Content = kept
	return b.put(componentName(file, ""), node)
}

func (b *bundler) put(name string, n *yaml.Node) error {
	if b.existing[name] {
		return fmt.Errorf("openapi bundle: component %s exists in openapi.yaml and in schemas/", name)
	}
	b.existing[name] = true
	clearStyle(n)
	b.out = append(b.out, component{name: name, node: n})
	return nil
}

// clearStyle drops the JSON flow style so the copied schemas print as block YAML.
func clearStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	for _, c := range n.Content {
		clearStyle(c)
	}
}

// mapPath walks mapping keys from n.
func mapPath(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}
