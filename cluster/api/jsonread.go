package api

import (
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// v1JSON is encoding/json's own semantics (its v1 options: durations as
// nanoseconds, names matched without case, unknown names ignored, invalid
// UTF-8 replaced, ...) for the JSON package that becomes Go's
// encoding/json/v2.
var v1JSON = jsonv1.DefaultOptionsV1()

// ReadJSON reads data into v as encoding/json's Unmarshal does, in about
// half its time. It is for what the daemons and commands read most: a job
// list's records, Raft's entries on every controller (fsm.Decode), a
// submit's request on the leader. What they write stays with
// encoding/json, the faster writer.
func ReadJSON(data []byte, v any) error { return jsonv2.Unmarshal(data, v, v1JSON) }
