package config

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Load defines the flags on fs, parses args and builds the configuration: flags set on the
// command line win over MEMBUS_* environment variables, which win over the YAML file
// (--config / MEMBUS_CONFIG), which wins over Defaults. The result is validated.
func Load(fs *flag.FlagSet, args []string, getenv func(string) string) (Config, error) {
	flagged := Defaults()
	flagged.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return FromFlags(flagged, func(name string) bool { return set[name] }, getenv)
}

// FromFlags builds the configuration after a command line was parsed into flagged (the Config
// whose RegisterFlags defined the flags): the flags for which changed reports true win over
// MEMBUS_* environment variables, which win over the YAML file (--config / MEMBUS_CONFIG),
// which wins over Defaults. The result is validated.
func FromFlags(flagged Config, changed func(flag string) bool, getenv func(string) string) (Config, error) {
	c := Defaults()
	c.sources = map[string]string{}
	flagFields := flagged.fields()
	fields := c.fields()

	// The file is named by the flag, else the env var.
	cfgField, _ := c.fieldByKey("config")
	switch {
	case changed(cfgField.flag()):
		c.ConfigFile, c.sources["config"] = flagged.ConfigFile, SourceFlag
	case getenv(cfgField.env()) != "":
		c.ConfigFile, c.sources["config"] = getenv(cfgField.env()), SourceEnv
	}
	if c.ConfigFile != "" {
		data, err := os.ReadFile(c.ConfigFile)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %w", ErrInvalid, cfgField.name(), err)
		}
		if err := c.applyYAML(data); err != nil {
			return Config{}, fmt.Errorf("%w: config file %s: %w", ErrInvalid, c.ConfigFile, err)
		}
	}
	for _, f := range fields {
		if f.key == "config" {
			continue
		}
		if v := getenv(f.env()); v != "" {
			if err := f.set(v); err != nil {
				return Config{}, fmt.Errorf("%w: %s: %w", ErrInvalid, f.env(), err)
			}
			c.sources[f.key] = SourceEnv
		}
	}
	for i, f := range fields {
		if f.key == "config" || !changed(f.flag()) {
			continue
		}
		if err := f.set(flagFields[i].String()); err != nil {
			return Config{}, fmt.Errorf("%w: --%s: %w", ErrInvalid, f.flag(), err)
		}
		c.sources[f.key] = SourceFlag
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// applyYAML sets the keys of a YAML mapping; an unknown key is an error naming it.
func (c *Config) applyYAML(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	for key, node := range doc {
		f, ok := c.fieldByKey(key)
		if !ok || f.noFile {
			return fmt.Errorf("unknown key %q", key)
		}
		var err error
		switch {
		case f.str != nil:
			err = node.Decode(f.str)
		case f.b != nil:
			err = node.Decode(f.b)
		case f.n != nil:
			err = node.Decode(f.n)
		}
		if err != nil {
			return fmt.Errorf("%s (line %d): %w", key, node.Line, err)
		}
		c.sources[key] = SourceFile
	}
	return nil
}
