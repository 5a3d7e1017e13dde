package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/membus/membus/pkg/contract"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// RPC error codes (contract.RPCError.Code).
const (
	CodeBadRequest  = "bad_request"
	CodeNotFound    = "not_found"
	CodeUnavailable = "unavailable"
	CodeInternal    = "internal"
)

// rpcStatus maps an error code to the status put in the micro error-code header.
var rpcStatus = map[string]string{
	CodeBadRequest:  "400",
	CodeNotFound:    "404",
	CodeUnavailable: "503",
	CodeInternal:    "500",
}

// RPCHandler answers one request for account (parsed from the subject and validated). It may
// respond later from another goroutine (async), e.g. when a commit completes.
type RPCHandler func(ctx context.Context, account string, req micro.Request)

// RPCServer serves a service's request-reply operations on <p>.rpc.<account>.<op> with the
// queue group n.Consumer(service), so any number of replicas share the requests.
type RPCServer struct {
	n      Names
	svc    micro.Service
	ctx    context.Context
	cancel context.CancelFunc
}

// ErrInvalidOp is returned (wrapped) by Handle for an op that is not dot-separated tokens of
// [a-z0-9_-].
var ErrInvalidOp = errors.New("invalid rpc op")

// NewRPCServer registers a micro service named n.Consumer(service) (version: semver).
func NewRPCServer(nc *nats.Conn, n Names, service, version string) (*RPCServer, error) {
	name := n.Consumer(service)
	svc, err := micro.AddService(nc, micro.Config{
		Name:        name,
		Version:     version,
		QueueGroup:  name,
		Description: "membus " + service,
	})
	if err != nil {
		return nil, fmt.Errorf("rpc service %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &RPCServer{n: n, svc: svc, ctx: ctx, cancel: cancel}, nil
}

// Handle serves op (e.g. "recall", "memories.list") on n.RPC("*", op), and on
// the UserRPC subjects of every user for user credentials: there the payload's user_id is replaced by
// the subject's user before h sees it. A request whose account or user token is invalid is
// answered bad_request without calling h.
func (s *RPCServer) Handle(op string, h RPCHandler) error {
	if err := validOp(op); err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("rpc handle %s: nil handler", op)
	}
	prefixLen := len(strings.Split(s.n.RPC("x", ""), ".")) - 2 // tokens before the account
	endpoint := strings.ReplaceAll(op, ".", "_")
	err := s.svc.AddEndpoint(endpoint, micro.HandlerFunc(func(req micro.Request) {
		toks := strings.Split(req.Subject(), ".")
		account := ""
		if len(toks) > prefixLen {
			account = toks[prefixLen]
		}
		if err := ValidAccount(account); err != nil {
			_ = RespondError(req, CodeBadRequest, err)
			return
		}
		h(s.ctx, account, req)
	}), micro.WithEndpointSubject(s.n.RPC("*", op)))
	if err != nil {
		return fmt.Errorf("rpc handle %s: %w", op, err)
	}
	err = s.svc.AddEndpoint(endpoint+"_user", micro.HandlerFunc(func(req micro.Request) {
		toks := strings.Split(req.Subject(), ".")
		if len(toks) <= prefixLen+1 {
			_ = RespondError(req, CodeBadRequest, fmt.Errorf("%w %q", ErrBadSubject, req.Subject()))
			return
		}
		account := toks[prefixLen]
		if err := ValidAccount(account); err != nil {
			_ = RespondError(req, CodeBadRequest, err)
			return
		}
		user, err := ParseUserToken(toks[prefixLen+1])
		if err != nil {
			_ = RespondError(req, CodeBadRequest, err)
			return
		}
		data, err := withUser(req.Data(), user)
		if err != nil {
			_ = RespondError(req, CodeBadRequest, err)
			return
		}
		h(s.ctx, account, userRequest{Request: req, data: data})
	}), micro.WithEndpointSubject(s.n.userRPCFilter(op)))
	if err != nil {
		return fmt.Errorf("rpc handle %s for users: %w", op, err)
	}
	return nil
}

// userRequest is a request made on a UserRPC subject, its payload bound to the subject's user.
type userRequest struct {
	micro.Request
	data []byte
}

func (r userRequest) Data() []byte { return r.data }

// withUser sets the user_id of a JSON object payload (an empty payload becomes {"user_id"}).
func withUser(payload []byte, user string) ([]byte, error) {
	obj := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(payload)) > 0 {
		if err := json.Unmarshal(payload, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("the request must be a JSON object")
		}
	}
	u, err := json.Marshal(user)
	if err != nil {
		return nil, err
	}
	obj["user_id"] = u
	return json.Marshal(obj)
}

func validOp(op string) error {
	if op == "" {
		return fmt.Errorf("%w %q: empty", ErrInvalidOp, op)
	}
	for _, tok := range strings.Split(op, ".") {
		if tok == "" {
			return fmt.Errorf("%w %q: empty token", ErrInvalidOp, op)
		}
		for i := 0; i < len(tok); i++ {
			if !isLowerTokenByte(tok[i]) {
				return fmt.Errorf("%w %q: tokens must be [a-z0-9_-]", ErrInvalidOp, op)
			}
		}
	}
	return nil
}

// Stop drains the endpoints and cancels the context handed to handlers.
func (s *RPCServer) Stop() error {
	defer s.cancel()
	if err := s.svc.Stop(); err != nil {
		return fmt.Errorf("rpc stop: %w", err)
	}
	return nil
}

// RespondJSON answers req with v as JSON.
func RespondJSON(req micro.Request, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return RespondError(req, CodeInternal, fmt.Errorf("marshal response: %w", err))
	}
	return req.Respond(data)
}

// RespondError answers req with a contract.RPCError body and the micro error headers
// (Nats-Service-Error-Code 400/404/503/500). An unknown code is sent as internal.
func RespondError(req micro.Request, code string, err error) error {
	status, ok := rpcStatus[code]
	if !ok {
		code, status = CodeInternal, rpcStatus[CodeInternal]
	}
	msg := "error"
	if err != nil && err.Error() != "" {
		msg = err.Error()
	}
	body, merr := json.Marshal(contract.RPCError{V: contract.Version, Error: msg, Code: code})
	if merr != nil {
		return merr
	}
	return req.Error(status, headerSafe(msg), body)
}

// RPCCallError is an error answered by the remote endpoint (or "unavailable" when nobody
// serves the subject). Match it with errors.As.
type RPCCallError struct {
	Code    string
	Message string
	Err     error // the transport error behind an "unavailable", if any
}

func (e *RPCCallError) Error() string { return e.Code + ": " + e.Message }
func (e *RPCCallError) Unwrap() error { return e.Err }

// Call sends req as JSON to subject and decodes the answer into resp (which may be nil). An
// error answer becomes *RPCCallError; no responders becomes *RPCCallError{Code: unavailable}.
// The ctx deadline is the timeout (10s when ctx has none).
func Call(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("call %s: marshal: %w", subject, err)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, subject, data)
	if errors.Is(err, nats.ErrNoResponders) {
		return &RPCCallError{Code: CodeUnavailable, Message: "no service answers " + subject, Err: err}
	}
	if err != nil {
		return fmt.Errorf("call %s: %w", subject, err)
	}
	if status := msg.Header.Get(micro.ErrorCodeHeader); status != "" {
		var rerr contract.RPCError
		if json.Unmarshal(msg.Data, &rerr) != nil || rerr.Code == "" {
			rerr.Code = codeOfStatus(status)
			rerr.Error = msg.Header.Get(micro.ErrorHeader)
		}
		return &RPCCallError{Code: rerr.Code, Message: rerr.Error}
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(msg.Data, resp); err != nil {
		return fmt.Errorf("call %s: decode response: %w", subject, err)
	}
	return nil
}

func codeOfStatus(status string) string {
	for code, s := range rpcStatus {
		if s == status {
			return code
		}
	}
	return CodeInternal
}
