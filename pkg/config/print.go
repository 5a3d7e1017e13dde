package config

import (
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// WriteYAML writes the configuration as the YAML file Load reads, with the source of each
// value (flag, env, file, default) as a trailing comment. It prints what it is given: callers
// showing it to people pass c.Redacted().
func (c Config) WriteYAML(w io.Writer) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	if c.ConfigFile != "" {
		root.HeadComment = "config file: " + c.ConfigFile + " (" + c.Source("config") + ")"
	}
	for _, f := range c.fields() {
		if f.noFile {
			continue
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Value: f.String(), LineComment: c.Source(f.key)}
		switch {
		case f.b != nil:
			val.Tag = "!!bool"
		case f.n != nil:
			val.Tag = "!!int"
		default:
			val.Tag = "!!str"
		}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.key}, val)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("write config yaml: %w", err)
	}
	return enc.Close()
}
