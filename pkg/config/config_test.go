package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "membus.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("membus", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return Load(fs, args, envOf(env))
}

func TestDefaults(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	checks := []struct{ name, got, want string }{
		{"data dir", c.DataDir, "./data"},
		{"http addr", c.HTTPAddr, "127.0.0.1:8080"},
		{"nats listen", c.NATSListen, "127.0.0.1:4222"},
		{"nats sync", c.NATSSync, "always"},
		{"subject prefix", c.SubjectPrefix, "membus"},
		{"embedder", c.Embedder, "auto"},
		{"log level", c.LogLevel, "info"},
		{"model path under the data dir", c.ModelPath(), filepath.Join("data", "models")},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %q, want %q", ck.name, ck.got, ck.want)
		}
	}
	if c.CommitTokenThreshold != 20000 || c.KeepRecent != 10 || c.InsecureNoAuth {
		t.Errorf("threshold/keep/insecure = %d/%d/%v", c.CommitTokenThreshold, c.KeepRecent, c.InsecureNoAuth)
	}
	if !c.Embedded() {
		t.Error("no NATS URL must mean embedded")
	}
	if !instanceIDRe.MatchString(c.InstanceID) || !strings.HasSuffix(c.InstanceID, "-"+strconv.Itoa(os.Getpid())) {
		t.Errorf("instance id %q is not token-safe host-pid", c.InstanceID)
	}
}

func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, "http_addr: 127.0.0.1:9000\nnats_sync: interval\nkeep_recent: 4\nsubject_prefix: fromfile\nlog_level: warn\n")
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		key        string
		get        func(Config) any
		want       any
		wantSource string
	}{
		{"nothing set: default", nil, nil, "http_addr",
			func(c Config) any { return c.HTTPAddr }, "127.0.0.1:8080", SourceDefault},
		{"file beats default", []string{"--config", file}, nil, "http_addr",
			func(c Config) any { return c.HTTPAddr }, "127.0.0.1:9000", SourceFile},
		{"file named by MEMBUS_CONFIG", nil, map[string]string{"MEMBUS_CONFIG": file}, "nats_sync",
			func(c Config) any { return c.NATSSync }, "interval", SourceFile},
		{"env beats file", []string{"--config", file}, map[string]string{"MEMBUS_HTTP_ADDR": "127.0.0.1:7000"}, "http_addr",
			func(c Config) any { return c.HTTPAddr }, "127.0.0.1:7000", SourceEnv},
		{"flag beats env and file", []string{"--config", file, "--http-addr", "127.0.0.1:6000"},
			map[string]string{"MEMBUS_HTTP_ADDR": "127.0.0.1:7000"}, "http_addr",
			func(c Config) any { return c.HTTPAddr }, "127.0.0.1:6000", SourceFlag},
		{"an unset flag does not override env with its default", nil,
			map[string]string{"MEMBUS_SUBJECT_PREFIX": "prod"}, "subject_prefix",
			func(c Config) any { return c.SubjectPrefix }, "prod", SourceEnv},
		{"int from file", []string{"--config", file}, nil, "keep_recent",
			func(c Config) any { return c.KeepRecent }, 4, SourceFile},
		{"int from env beats file", []string{"--config", file}, map[string]string{"MEMBUS_KEEP_RECENT": "2"}, "keep_recent",
			func(c Config) any { return c.KeepRecent }, 2, SourceEnv},
		{"int flag beats env", []string{"--keep-recent=0"}, map[string]string{"MEMBUS_KEEP_RECENT": "2"}, "keep_recent",
			func(c Config) any { return c.KeepRecent }, 0, SourceFlag},
		{"threshold from env", nil, map[string]string{"MEMBUS_COMMIT_TOKEN_THRESHOLD": "50000"}, "commit_token_threshold",
			func(c Config) any { return c.CommitTokenThreshold }, 50000, SourceEnv},
		{"bool env 1 is true", nil, map[string]string{"MEMBUS_INSECURE_NO_AUTH": "1"}, "insecure_no_auth",
			func(c Config) any { return c.InsecureNoAuth }, true, SourceEnv},
		{"bool flag false beats env true", []string{"--insecure-no-auth=false"}, map[string]string{"MEMBUS_INSECURE_NO_AUTH": "true"}, "insecure_no_auth",
			func(c Config) any { return c.InsecureNoAuth }, false, SourceFlag},
		{"external NATS URL turns off the embedded server", nil, map[string]string{"MEMBUS_NATS_URL": "nats://n1:4222,nats://n2:4222"}, "nats_url",
			func(c Config) any { return c.Embedded() }, false, SourceEnv},
		{"every docs/design.md §9 env name is read", nil, map[string]string{"MEMBUS_MODEL_DIR": "/models"}, "model_dir",
			func(c Config) any { return c.ModelPath() }, "/models", SourceEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.args, tt.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := tt.get(c); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if got := c.Source(tt.key); got != tt.wantSource {
				t.Errorf("Source(%s) = %s, want %s", tt.key, got, tt.wantSource)
			}
		})
	}
}

func TestEveryKeyHasEnvAndFlag(t *testing.T) {
	spec := []string{"MEMBUS_DATA_DIR", "MEMBUS_HTTP_ADDR", "MEMBUS_NATS_LISTEN", "MEMBUS_NATS_URL",
		"MEMBUS_NATS_TOKEN", "MEMBUS_NATS_SYNC", "MEMBUS_REDIS_URL", "MEMBUS_MYSQL_DSN", "MEMBUS_QDRANT_URL",
		"MEMBUS_SUBJECT_PREFIX", "MEMBUS_EMBEDDER", "MEMBUS_MODEL_DIR", "MEMBUS_EMBED_BASE_URL",
		"MEMBUS_EMBED_MODEL", "MEMBUS_EMBED_API_KEY", "MEMBUS_LLM_BASE_URL", "MEMBUS_LLM_MODEL",
		"MEMBUS_LLM_API_KEY", "MEMBUS_INSTANCE_ID", "MEMBUS_TZ", "MEMBUS_LOG_LEVEL", "MEMBUS_INSECURE_NO_AUTH",
		"MEMBUS_CONFIG", "MEMBUS_COMMIT_TOKEN_THRESHOLD", "MEMBUS_KEEP_RECENT"}
	c := Defaults()
	envs := map[string]bool{}
	for _, f := range c.fields() {
		envs[f.env()] = true
	}
	for _, e := range spec {
		if !envs[e] {
			t.Errorf("no key reads %s", e)
		}
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	for _, name := range []string{"data-dir", "http-addr", "nats-listen", "nats-url", "nats-token", "nats-sync",
		"redis-url", "mysql-dsn", "qdrant-url", "subject-prefix", "embedder", "model-dir", "embed-base-url",
		"embed-model", "embed-api-key", "llm-base-url", "llm-model", "llm-api-key", "instance-id", "tz",
		"log-level", "insecure-no-auth", "commit-token-threshold", "keep-recent", "config"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag --%s is not defined", name)
		}
	}
}

func TestValidationErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nats sync", map[string]string{"MEMBUS_NATS_SYNC": "x"}, `MEMBUS_NATS_SYNC / --nats-sync: must be "always" or "interval", got "x"`},
		{"subject prefix with a dot", map[string]string{"MEMBUS_SUBJECT_PREFIX": "mem.bus"}, "MEMBUS_SUBJECT_PREFIX / --subject-prefix:"},
		{"upper-case subject prefix", map[string]string{"MEMBUS_SUBJECT_PREFIX": "MEMBUS"}, "MEMBUS_SUBJECT_PREFIX / --subject-prefix:"},
		{"http addr without port", map[string]string{"MEMBUS_HTTP_ADDR": "localhost"}, "MEMBUS_HTTP_ADDR / --http-addr: must be host:port"},
		{"nats listen port out of range", map[string]string{"MEMBUS_NATS_LISTEN": "127.0.0.1:99999"}, "MEMBUS_NATS_LISTEN / --nats-listen: port"},
		{"nats url scheme", map[string]string{"MEMBUS_NATS_URL": "http://n1:4222"}, "MEMBUS_NATS_URL / --nats-url: URL scheme"},
		{"redis url scheme", map[string]string{"MEMBUS_REDIS_URL": "localhost:6379"}, "MEMBUS_REDIS_URL / --redis-url:"},
		{"mysql dsn", map[string]string{"MEMBUS_MYSQL_DSN": "not a dsn"}, "MEMBUS_MYSQL_DSN / --mysql-dsn:"},
		{"qdrant url", map[string]string{"MEMBUS_QDRANT_URL": "qdrant:6333"}, "MEMBUS_QDRANT_URL / --qdrant-url:"},
		{"embedder", map[string]string{"MEMBUS_EMBEDDER": "bert"}, `MEMBUS_EMBEDDER / --embedder: must be one of auto, hash, openai, onnx, got "bert"`},
		{"openai embedder needs a model", map[string]string{"MEMBUS_EMBEDDER": "openai", "MEMBUS_EMBED_BASE_URL": "http://127.0.0.1:11434/v1"}, "MEMBUS_EMBED_MODEL / --embed-model: is required"},
		{"embed base url", map[string]string{"MEMBUS_EMBED_BASE_URL": "ftp://x"}, "MEMBUS_EMBED_BASE_URL / --embed-base-url:"},
		{"llm base url without model", map[string]string{"MEMBUS_LLM_BASE_URL": "http://127.0.0.1:11434/v1"}, "MEMBUS_LLM_MODEL / --llm-model:"},
		{"instance id with a dot", map[string]string{"MEMBUS_INSTANCE_ID": "host.example-1"}, "MEMBUS_INSTANCE_ID / --instance-id:"},
		{"time zone", map[string]string{"MEMBUS_TZ": "Mars/Olympus"}, "MEMBUS_TZ / --tz: unknown time zone"},
		{"log level", map[string]string{"MEMBUS_LOG_LEVEL": "loud"}, "MEMBUS_LOG_LEVEL / --log-level:"},
		{"insecure no auth on all interfaces", map[string]string{"MEMBUS_INSECURE_NO_AUTH": "1", "MEMBUS_HTTP_ADDR": "0.0.0.0:8080"}, "MEMBUS_INSECURE_NO_AUTH / --insecure-no-auth: is allowed only when the HTTP address is loopback"},
		{"insecure no auth on an empty host", map[string]string{"MEMBUS_INSECURE_NO_AUTH": "true", "MEMBUS_HTTP_ADDR": ":8080"}, "MEMBUS_INSECURE_NO_AUTH / --insecure-no-auth:"},
		{"threshold too low", map[string]string{"MEMBUS_COMMIT_TOKEN_THRESHOLD": "1999"}, "MEMBUS_COMMIT_TOKEN_THRESHOLD / --commit-token-threshold: must be between 2000 and 200000, got 1999"},
		{"threshold too high", map[string]string{"MEMBUS_COMMIT_TOKEN_THRESHOLD": "200001"}, "MEMBUS_COMMIT_TOKEN_THRESHOLD / --commit-token-threshold:"},
		{"no ingest workers", map[string]string{"MEMBUS_INGEST_WORKERS": "0"}, "MEMBUS_INGEST_WORKERS / --ingest-workers: must be between 1 and 16, got 0"},
		{"no recall candidates", map[string]string{"MEMBUS_RECALL_CANDIDATES": "0"}, "MEMBUS_RECALL_CANDIDATES / --recall-candidates: must be between 1 and 200, got 0"},
		{"too many recall candidates", map[string]string{"MEMBUS_RECALL_CANDIDATES": "201"}, "MEMBUS_RECALL_CANDIDATES / --recall-candidates:"},
		{"negative keep recent", map[string]string{"MEMBUS_KEEP_RECENT": "-1"}, "MEMBUS_KEEP_RECENT / --keep-recent:"},
		{"env int that is not a number", map[string]string{"MEMBUS_KEEP_RECENT": "ten"}, `MEMBUS_KEEP_RECENT: not an integer: "ten"`},
		{"env bool that is not a boolean", map[string]string{"MEMBUS_INSECURE_NO_AUTH": "yes please"}, "MEMBUS_INSECURE_NO_AUTH: not a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, nil, tt.env)
			if err == nil {
				t.Fatalf("Load succeeded, want error containing %q", tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestInsecureNoAuthOnLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080"} {
		if _, err := load(t, []string{"--insecure-no-auth", "--http-addr", addr}, nil); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Defaults()
	c.NATSSync, c.Embedder, c.KeepRecent, c.DataDir = "x", "y", -5, ""
	err := c.Validate()
	for _, want := range []string{"--nats-sync", "--embedder", "--keep-recent", "MEMBUS_DATA_DIR / --data-dir: must not be empty"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestFileErrorsNameTheFileAndKey(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"unknown key", "data_dir: /x\nredis: redis://h\n", `unknown key "redis"`},
		{"config key inside the file", "config: other.yaml\n", `unknown key "config"`},
		{"camelCase key", "dataDir: /x\n", `unknown key "dataDir"`},
		{"int key with a string", "keep_recent: many\n", "keep_recent (line 1)"},
		{"not a mapping", "- a\n- b\n", "config file"},
		{"bad value from the file names the file", "nats_sync: sometimes\n", "nats_sync in "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.body)
			_, err := load(t, []string{"--config", p}, nil)
			if err == nil {
				t.Fatalf("Load succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	if _, err := load(t, []string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}, nil); err == nil ||
		!strings.Contains(err.Error(), "MEMBUS_CONFIG / --config") {
		t.Errorf("missing file: %v", err)
	}
}

func TestRedacted(t *testing.T) {
	tests := []struct {
		name   string
		set    func(c *Config)
		get    func(c Config) string
		want   string
		secret string
	}{
		{"mysql dsn password", func(c *Config) { c.MySQLDSN = "u:secret@tcp(h:3306)/db" },
			func(c Config) string { return c.MySQLDSN }, "u:***@tcp(h:3306)/db", "secret"},
		{"mysql dsn password with @ and params", func(c *Config) { c.MySQLDSN = "membus:p@ss:w0rd@tcp(db:3306)/membus?parseTime=true" },
			func(c Config) string { return c.MySQLDSN }, "membus:***@tcp(db:3306)/membus?parseTime=true", "w0rd"},
		{"mysql dsn without password is kept", func(c *Config) { c.MySQLDSN = "root@tcp(h:3306)/db" },
			func(c Config) string { return c.MySQLDSN }, "root@tcp(h:3306)/db", ""},
		{"redis url password", func(c *Config) { c.RedisURL = "redis://:hunter2@cache:6379/0" },
			func(c Config) string { return c.RedisURL }, "redis://:***@cache:6379/0", "hunter2"},
		{"redis url user and password", func(c *Config) { c.RedisURL = "rediss://default:hunter2@cache:6380" },
			func(c Config) string { return c.RedisURL }, "rediss://default:***@cache:6380", "hunter2"},
		{"nats token in url", func(c *Config) { c.NATSURL = "nats://s3cr3t@n1:4222,nats://u:pw@n2:4222" },
			func(c Config) string { return c.NATSURL }, "nats://***@n1:4222,nats://u:***@n2:4222", "s3cr3t"},
		{"nats token", func(c *Config) { c.NATSToken = "tok-123" },
			func(c Config) string { return c.NATSToken }, "***", "tok-123"},
		{"embed api key", func(c *Config) { c.EmbedAPIKey = "sk-embed" },
			func(c Config) string { return c.EmbedAPIKey }, "***", "sk-embed"},
		{"llm api key", func(c *Config) { c.LLMAPIKey = "sk-llm" },
			func(c Config) string { return c.LLMAPIKey }, "***", "sk-llm"},
		{"api key in a query parameter", func(c *Config) { c.QdrantURL = "https://q.example:6333?api-key=qkey&x=1" },
			func(c Config) string { return c.QdrantURL }, "https://q.example:6333?api-key=***&x=1", "qkey"},
		{"empty secret stays empty", func(c *Config) { c.NATSToken = "" },
			func(c Config) string { return c.NATSToken }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			tt.set(&c)
			r := c.Redacted()
			if got := tt.get(r); got != tt.want {
				t.Errorf("redacted = %q, want %q", got, tt.want)
			}
			if tt.secret != "" {
				if tt.get(c) == tt.get(r) {
					t.Error("Redacted changed the original")
				}
				var buf bytes.Buffer
				if err := r.WriteYAML(&buf); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(buf.String(), tt.secret) {
					t.Errorf("printed config leaks %q:\n%s", tt.secret, buf.String())
				}
			}
		})
	}
}

func TestWriteYAMLRoundTripsWithSources(t *testing.T) {
	file := writeFile(t, "keep_recent: 3\nnats_sync: interval\n")
	c, err := load(t, []string{"--config", file, "--log-level", "debug"},
		map[string]string{"MEMBUS_SUBJECT_PREFIX": "prod", "MEMBUS_TZ": "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"keep_recent: 3 # file", "nats_sync: interval # file", "log_level: debug # flag",
		"subject_prefix: prod # env", "http_addr: 127.0.0.1:8080 # default", "insecure_no_auth: false # default",
		"config file: " + file} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// What config print shows can be loaded back as a file and gives the same values.
	again, err := load(t, []string{"--config", writeFile(t, out)}, nil)
	if err != nil {
		t.Fatalf("printed YAML does not load: %v\n%s", err, out)
	}
	if again.KeepRecent != 3 || again.NATSSync != "interval" || again.LogLevel != "debug" ||
		again.SubjectPrefix != "prod" || again.InstanceID != c.InstanceID || again.TZ != "UTC" {
		t.Errorf("reloaded %+v, want the values of %+v", again, c)
	}
	if again.Location() != time.UTC {
		t.Errorf("Location() = %v, want UTC", again.Location())
	}
}

func TestNewLogger(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "warn", "auto", "ingest", "host-1")
	log.Info("hidden")
	log.Warn("shown", "n", 1)
	out := buf.String()
	if strings.Contains(out, "hidden") {
		t.Errorf("info logged at level warn: %s", out)
	}
	for _, want := range []string{`"msg":"shown"`, `"service":"ingest"`, `"instance":"host-1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON log (not a terminal) lacks %s: %s", want, out)
		}
	}
}

func TestLogFormat(t *testing.T) {
	for _, tc := range []struct {
		name, format, want string
	}{
		{"auto on a non-terminal is JSON", "auto", `"msg":"hello"`},
		{"json when asked", "json", `"msg":"hello"`},
		{"text when asked, even on a non-terminal", "text", `msg=hello`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			NewLogger(&buf, "info", tc.format, "", "").Info("hello")
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("format %s wrote %q, want %s", tc.format, buf.String(), tc.want)
			}
		})
	}
}

func TestTLSKeys(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for _, p := range []string{cert, key} {
		if err := os.WriteFile(p, []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		want string // "" = valid
	}{
		{"off", nil, ""},
		{"cert and key", []string{"--tls-cert", cert, "--tls-key", key}, ""},
		{"cert alone", []string{"--tls-cert", cert}, "tls_cert and tls_key go together"},
		{"key alone", []string{"--tls-key", key}, "tls_cert and tls_key go together"},
		{"missing cert file", []string{"--tls-cert", filepath.Join(dir, "none.pem"), "--tls-key", key}, "MEMBUS_TLS_CERT / --tls-cert"},
		{"ca", []string{"--tls-ca", cert}, ""},
		{"missing ca file", []string{"--tls-ca", filepath.Join(dir, "none.pem")}, "MEMBUS_TLS_CA / --tls-ca"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.args, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("want valid, got %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
