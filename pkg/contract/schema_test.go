package contract_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/schemas"
)

const schemaBase = "https://membus.dev/schemas/"

// payloadTypes maps every schema (by file name without .schema.json) to the Go type its
// payloads decode into.
var payloadTypes = map[string]func() any{
	"turn_event":               func() any { return new(contract.TurnEvent) },
	"commit_request":           func() any { return new(contract.CommitRequest) },
	"commit_rpc_request":       func() any { return new(contract.CommitRPCRequest) },
	"commit_result":            func() any { return new(contract.CommitResult) },
	"event.common":             func() any { return new(contract.Event) },
	"event.archive_created":    func() any { return new(contract.Event) },
	"event.commit_completed":   func() any { return new(contract.Event) },
	"event.memory_upserted":    func() any { return new(contract.Event) },
	"event.memory_superseded":  func() any { return new(contract.Event) },
	"event.memory_deleted":     func() any { return new(contract.Event) },
	"event.summary_created":    func() any { return new(contract.Event) },
	"event.erased":             func() any { return new(contract.Event) },
	"recall_request":           func() any { return new(contract.RecallRequest) },
	"recall_response":          func() any { return new(contract.RecallResponse) },
	"context_request":          func() any { return new(contract.ContextRequest) },
	"context_response":         func() any { return new(contract.ContextResponse) },
	"metrics_snapshot":         func() any { return new(contract.MetricsSnapshot) },
	"dlq_envelope":             func() any { return new(contract.DLQEnvelope) },
	"rpc_error":                func() any { return new(contract.RPCError) },
	"memories_list_request":    func() any { return new(contract.MemoriesListRequest) },
	"memories_list_response":   func() any { return new(contract.MemoriesListResponse) },
	"memory_get_request":       func() any { return new(contract.MemoryGetRequest) },
	"memory_record":            func() any { return new(contract.MemoryRecord) },
	"memories_export_response": func() any { return new(contract.MemoriesExportResponse) },
	"memories_import_request":  func() any { return new(contract.MemoriesImportRequest) },
	"memories_import_response": func() any { return new(contract.MemoriesImportResponse) },
	"session_meta_request":     func() any { return new(contract.SessionMetaRequest) },
	"session_meta":             func() any { return new(contract.SessionMeta) },
	"archive_search_request":   func() any { return new(contract.ArchiveSearchRequest) },
	"archive_search_response":  func() any { return new(contract.ArchiveSearchResponse) },
	"archive_expand_request":   func() any { return new(contract.ArchiveExpandRequest) },
	"archive_expand_response":  func() any { return new(contract.ArchiveExpandResponse) },
	"summary_request":          func() any { return new(contract.SummaryRequest) },
	"summary_response":         func() any { return new(contract.SummaryResponse) },
	"stats_request":            func() any { return new(contract.StatsRequest) },
	"stats_response":           func() any { return new(contract.StatsResponse) },
	"erase_request":            func() any { return new(contract.EraseRequest) },
	"erase_result":             func() any { return new(contract.EraseResult) },
}

// invalidWant names, for every invalid example, a fragment of the validation error it must
// produce (an instance location or a missing property), so an example cannot fail for an
// unintended reason such as a typo elsewhere.
var invalidWant = map[string]string{
	"archive_expand_request/invalid/not_uuid.json":                 "/archive_id",
	"archive_expand_response/invalid/bad_role.json":                "/messages/0/role",
	"archive_search_request/invalid/empty_query.json":              "/query",
	"archive_search_request/invalid/missing_session.json":          "'session_id'",
	"archive_search_response/invalid/archive_without_matches.json": "/archives/0/matches",
	"commit_request/invalid/bad_account_id.json":                   "/account_id",
	"commit_request/invalid/missing_upto.json":                     "'upto'",
	"commit_request/invalid/unknown_kind.json":                     "/kind",
	"commit_result/invalid/failed_but_ok.json":                     "/ok",
	"commit_result/invalid/unknown_category.json":                  "hobby",
	"commit_result/invalid/unknown_reason.json":                    "/reason",
	"commit_result/invalid/unknown_status.json":                    "/status",
	"commit_rpc_request/invalid/auto_kind.json":                    "/kind",
	"commit_rpc_request/invalid/missing_wait.json":                 "'wait'",
	"commit_rpc_request/invalid/zero_timeout.json":                 "/timeout_ms",
	"context_request/invalid/missing_budget.json":                  "'token_budget'",
	"context_request/invalid/zero_budget.json":                     "/token_budget",
	"context_response/invalid/bad_role.json":                       "/messages/0/role",
	"context_response/invalid/long_abstract.json":                  "/archive_index/0/abstract",
	"context_response/invalid/missing_archive_index.json":          "'archive_index'",
	"dlq_envelope/invalid/missing_reason.json":                     "'reason'",
	"dlq_envelope/invalid/negative_failures.json":                  "/failures",
	"dlq_envelope/invalid/wildcard_subject.json":                   "/original_subject",
	"event.archive_created/invalid/empty_session.json":             "/session_id",
	"event.archive_created/invalid/missing_range.json":             "'to_seq'",
	"event.archive_created/invalid/wrong_kind.json":                "/kind",
	"event.commit_completed/invalid/accepted_status.json":          "/status",
	"event.commit_completed/invalid/missing_event_id.json":         "'event_id'",
	"event.commit_completed/invalid/skipped_without_reason.json":   "'reason'",
	"event.common/invalid/missing_at.json":                         "'at'",
	"event.common/invalid/unknown_kind.json":                       "/kind",
	"event.memory_deleted/invalid/missing_memory_id.json":          "'memory_id'",
	"event.memory_deleted/invalid/missing_user_id.json":            "'user_id'",
	"event.erased/invalid/missing_user_id.json":                    "'user_id'",
	"event.memory_superseded/invalid/missing_superseded_by.json":   "'superseded_by'",
	"event.memory_upserted/invalid/bad_at.json":                    "/at",
	"event.memory_upserted/invalid/bad_memory_id.json":             "/memory_id",
	"event.memory_upserted/invalid/unknown_category.json":          "/category",
	"event.summary_created/invalid/digest_without_bucket.json":     "'bucket'",
	"event.summary_created/invalid/unknown_period.json":            "/period",
	"memories_list_request/invalid/archive_scope.json":             "/scope",
	"memories_list_request/invalid/empty_cursor.json":              "/cursor",
	"memories_import_request/invalid/no_memories.json":             "/memories",
	"memory_record/invalid/agent_scope_without_agent.json":         "'agent_id'",
	"memory_record/invalid/digest.json":                            "/category",
	"memory_record/invalid/source_without_message.json":            "'message_id'",
	"memories_list_request/invalid/missing_user.json":              "'user_id'",
	"memories_list_response/invalid/item_without_sources.json":     "'sources'",
	"memories_list_response/invalid/memory_without_category.json":  "'category'",
	"memory_get_request/invalid/not_uuid.json":                     "/memory_id",
	"metrics_snapshot/invalid/bad_instance.json":                   "/instance",
	"metrics_snapshot/invalid/latency_without_p99.json":            "'p99'",
	"metrics_snapshot/invalid/negative_counter.json":               "/counters/membus_turns_total",
	"recall_request/invalid/bad_now.json":                          "/now",
	"recall_request/invalid/limit_zero.json":                       "/limit",
	"recall_request/invalid/missing_query.json":                    "'query'",
	"recall_request/invalid/unknown_scope.json":                    "/scopes/1",
	"recall_response/invalid/archive_item_two_sources.json":        "/items/2/sources",
	"recall_response/invalid/digest_with_sources.json":             "/items/3/sources",
	"recall_response/invalid/dropped_without_reason.json":          "'dropped'",
	"recall_response/invalid/item_without_score.json":              "'score'",
	"recall_response/invalid/missing_degraded.json":                "'degraded'",
	"recall_response/invalid/unknown_item_kind.json":               "/items/0/kind",
	"rpc_error/invalid/empty_error.json":                           "/error",
	"rpc_error/invalid/unknown_code.json":                          "/code",
	"erase_request/invalid/missing_user.json":                      "'user_id'",
	"stats_request/invalid/unknown_kind.json":                      "/kind",
	"stats_response/invalid/negative_count.json":                   "/overview/sessions",
	"session_meta/invalid/negative_count.json":                     "/message_count",
	"session_meta_request/invalid/missing_session.json":            "'session_id'",
	"summary_request/invalid/bad_date.json":                        "/date",
	"summary_request/invalid/unknown_period.json":                  "/period",
	"summary_response/invalid/day_with_week_bucket.json":           "/bucket",
	"summary_response/invalid/missing_text.json":                   "'text'",
	"turn_event/invalid/account_id_too_long.json":                  "/account_id",
	"turn_event/invalid/bad_account_id.json":                       "/account_id",
	"turn_event/invalid/bad_created_at.json":                       "/messages/1/created_at",
	"turn_event/invalid/missing_event_id.json":                     "'event_id'",
	"turn_event/invalid/missing_is_heartbeat.json":                 "'is_heartbeat'",
	"turn_event/invalid/missing_v.json":                            "'v'",
	"turn_event/invalid/negative_position.json":                    "/messages/0/position",
	"turn_event/invalid/no_messages_not_heartbeat.json":            "/messages",
	"turn_event/invalid/text_part_without_text.json":               "/messages/0/parts/0",
	"turn_event/invalid/threshold_too_high.json":                   "/turn/commit_token_threshold",
	"turn_event/invalid/threshold_too_low.json":                    "/turn/commit_token_threshold",
	"turn_event/invalid/tool_call_without_name.json":               "/messages/1/parts/0",
	"turn_event/invalid/tool_result_without_output.json":           "/messages/2/parts/0",
	"turn_event/invalid/unknown_part_type.json":                    "/messages/0/parts/1",
	"turn_event/invalid/unknown_role.json":                         "/messages/0/role",
	"turn_event/invalid/version_2.json":                            "/v",
}

// compileSchemas compiles every *.schema.json of schemas.JSON and returns them by name.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	files, err := fs.Glob(schemas.JSON, "*.schema.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in schemas.JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, f := range files {
		doc := readJSON(t, f)
		obj, ok := doc.(map[string]any)
		if !ok {
			t.Fatalf("%s: not a JSON object", f)
		}
		if got, want := obj["$id"], schemaBase+f; got != want {
			t.Errorf("%s: $id = %v, want %s", f, got, want)
		}
		if err := c.AddResource(schemaBase+f, doc); err != nil {
			t.Fatalf("add %s: %v", f, err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, f := range files {
		sch, err := c.Compile(schemaBase + f)
		if err != nil {
			t.Fatalf("compile %s: %v", f, err)
		}
		out[strings.TrimSuffix(f, ".schema.json")] = sch
	}
	return out
}

func readJSON(t *testing.T, name string) any {
	t.Helper()
	b, err := fs.ReadFile(schemas.JSON, name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func TestEverySchemaRequiresVersionOne(t *testing.T) {
	files, _ := fs.Glob(schemas.JSON, "*.schema.json")
	for _, f := range files {
		obj := readJSON(t, f).(map[string]any)
		req, _ := obj["required"].([]any)
		if !slices.Contains(req, any("v")) {
			t.Errorf("%s: \"v\" is not required", f)
		}
		props, _ := obj["properties"].(map[string]any)
		v, _ := props["v"].(map[string]any)
		if c, ok := v["const"].(json.Number); !ok || c.String() != "1" {
			t.Errorf("%s: properties.v is not {\"const\": 1}: %v", f, props["v"])
		}
	}
}

func TestSchemasAndPayloadTypesMatch(t *testing.T) {
	compiled := compileSchemas(t)
	for name := range compiled {
		if _, ok := payloadTypes[name]; !ok {
			t.Errorf("schema %s has no Go type in payloadTypes", name)
		}
	}
	covered := map[string]bool{}
	for name, newT := range payloadTypes {
		if _, ok := compiled[name]; !ok {
			t.Errorf("payloadTypes names %s, which has no schema", name)
		}
		covered[reflect.TypeOf(newT()).Elem().Name()] = true
	}
	// Every struct of this package with a `json:"v"` field is a payload and needs a schema.
	for _, typ := range versionedStructs(t) {
		if !covered[typ] {
			t.Errorf("payload type contract.%s has no schema", typ)
		}
	}
}

// versionedStructs parses the package's sources and lists the struct types with a "v" field.
func versionedStructs(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				if fld.Tag != nil && strings.Contains(fld.Tag.Value, `json:"v"`) {
					out = append(out, ts.Name.Name)
				}
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatal("found no payload types; is the parser looking at the right directory?")
	}
	return out
}

func TestValidExamplesRoundTrip(t *testing.T) {
	compiled := compileSchemas(t)
	for name, sch := range compiled {
		files, _ := fs.Glob(schemas.JSON, path.Join("examples", name, "*.json"))
		if len(files) == 0 {
			t.Errorf("schema %s has no valid example in examples/%s/", name, name)
			continue
		}
		newT := payloadTypes[name]
		for _, f := range files {
			t.Run(strings.TrimPrefix(f, "examples/"), func(t *testing.T) {
				orig, err := fs.ReadFile(schemas.JSON, f)
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Validate(readJSON(t, f)); err != nil {
					t.Fatalf("valid example fails its schema:\n%v", err)
				}
				if newT == nil {
					t.Fatalf("no Go type for schema %s", name)
				}
				v := newT()
				if err := json.Unmarshal(orig, v); err != nil {
					t.Fatalf("decode into %T: %v", v, err)
				}
				again, err := json.Marshal(v)
				if err != nil {
					t.Fatalf("encode %T: %v", v, err)
				}
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(again))
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Validate(inst); err != nil {
					t.Fatalf("re-encoded %T fails the schema:\n%v\n%s", v, err, again)
				}
				var a, b any
				if err := json.Unmarshal(orig, &a); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(again, &b); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("round trip through %T changed the payload (a field the Go type lacks, or omitempty dropping a value):\nexample:    %s\nre-encoded: %s",
						v, compact(t, orig), again)
				}
			})
		}
	}
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestInvalidExamplesFail(t *testing.T) {
	compiled := compileSchemas(t)
	files, _ := fs.Glob(schemas.JSON, "examples/*/invalid/*.json")
	if len(files) == 0 {
		t.Fatal("no invalid examples")
	}
	seen := map[string]bool{}
	for _, f := range files {
		key := strings.TrimPrefix(f, "examples/")
		seen[key] = true
		t.Run(key, func(t *testing.T) {
			name := strings.Split(key, "/")[0]
			sch, ok := compiled[name]
			if !ok {
				t.Fatalf("no schema %s", name)
			}
			want, ok := invalidWant[key]
			if !ok {
				t.Fatalf("add %q to invalidWant: the error fragment this example must produce", key)
			}
			err := sch.Validate(readJSON(t, f))
			if err == nil {
				t.Fatal("invalid example passes its schema")
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not mention %q:\n%v", want, err)
			}
		})
	}
	for key := range invalidWant {
		if !seen[key] {
			t.Errorf("invalidWant names %s, which does not exist", key)
		}
	}
}
