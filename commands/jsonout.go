package commands

import (
	"io"

	"hpc/cluster/openapi"
)

// writeMime writes v as Slurm's serializer for --json or --yaml does
// (mime "json" or "yaml"): json-c's text ends without a newline; the
// YAML document is framed by "---" and "..." (openapi.JSON, openapi.YAML).
func writeMime(w io.Writer, mime string, v openapi.Obj) {
	if mime == "json" {
		io.WriteString(w, openapi.JSON(v))
		return
	}
	io.WriteString(w, openapi.YAML(v))
}
