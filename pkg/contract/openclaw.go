package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// SourceOpenClaw is the TurnEvent source of the OpenClaw plugin.
const SourceOpenClaw = "openclaw"

var (
	uuidRe          = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	agentKeyRe      = regexp.MustCompile(`^agent:([^:]+):`)
	notAgentSafeRe  = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)
	windowsIllegal  = `:<>"\/|?*`
	openClawSession = "openclaw-session:"
)

// OpenClawSessionID maps OpenClaw's session identity to membus's storage id exactly as
// OpenViking's plugin does (docs/design.md §3): a UUID session id is lower-cased; else a non-empty
// session key becomes sha256(key); else a session id with Windows-illegal characters becomes
// sha256("openclaw-session:" + id); else the id is kept as is.
func OpenClawSessionID(sessionID, sessionKey string) string {
	switch {
	case uuidRe.MatchString(sessionID):
		return strings.ToLower(sessionID)
	case sessionKey != "":
		return sha256Hex(sessionKey)
	case strings.ContainsAny(sessionID, windowsIllegal):
		return sha256Hex(openClawSession + sessionID)
	default:
		return sessionID
	}
}

// OpenClawAgentID resolves the agent id (docs/design.md §3): the <id> of a session key of the form
// agent:<id>:<rest>, else the runtime agent id, else "main"; prefixed "<prefix>_" when a prefix
// is configured; sanitised to [a-zA-Z0-9_-].
func OpenClawAgentID(sessionKey, runtimeAgentID, prefix string) string {
	id := runtimeAgentID
	if m := agentKeyRe.FindStringSubmatch(sessionKey); m != nil {
		id = m[1]
	}
	if id == "" {
		id = "main"
	}
	if prefix != "" {
		id = prefix + "_" + id
	}
	id = notAgentSafeRe.ReplaceAllString(id, "_")
	return id
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
