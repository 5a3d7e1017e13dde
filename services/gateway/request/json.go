package request

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// DecodeJSON decodes body into v; an empty body is allowed only when optional. Unknown
// fields are ignored, like every membus decoder.
func DecodeJSON(body []byte, v any, optional bool) *Error {
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return BadRequest("a JSON body is required")
	}
	if !utf8.Valid(body) {
		return BadRequest("the body is not valid UTF-8")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return BadRequest("invalid JSON body: " + err.Error())
	}
	return nil
}
