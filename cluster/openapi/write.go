package openapi

import (
	"fmt"
	"strconv"
	"strings"
)

// The one writer of Slurm's data_t trees: slurmrestd's answers and
// sacct's, squeue's and sinfo's --json and --yaml. A value is nil, bool,
// int64, float64, string, Unset, Obj (keys in order) or []any.

// JSON is v as Slurm's serializer writes it for JSON: json-c's text,
// ending without a newline.
func JSON(v any) string {
	var b strings.Builder
	writeJSON(&b, v, 0)
	return b.String()
}

// YAML is v as Slurm's serializer writes it for YAML: a document framed
// by "---" and "...".
func YAML(v any) string {
	var b strings.Builder
	b.WriteString("---")
	writeYAML(&b, v, 0, false)
	b.WriteString("...\n")
	return b.String()
}

// jsonDouble is json-c's double: "%.17g", with ".0" added to what would
// read as an integer.
func jsonDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', 17, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

// writeJSON writes v as json-c does with JSON_C_TO_STRING_SPACED and
// JSON_C_TO_STRING_PRETTY (Slurm's DATA_SER_FLAGS_PRETTY): two spaces a
// level, "key": value, '/' escaped.
func writeJSON(b *strings.Builder, v any, level int) {
	indent := func(l int) { b.WriteString(strings.Repeat("  ", l)) }
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(jsonDouble(x))
	case string:
		b.WriteString(jsonString(x))
	case Unset:
		b.WriteString(`""`)
	case Obj:
		b.WriteString("{\n")
		for i, kv := range x {
			if i > 0 {
				b.WriteString(",\n")
			}
			indent(level + 1)
			b.WriteString(jsonString(kv.K) + ": ")
			writeJSON(b, kv.V, level+1)
		}
		if len(x) > 0 {
			b.WriteString("\n")
		}
		indent(level)
		b.WriteString("}")
	case []any:
		b.WriteString("[\n")
		for i, e := range x {
			if i > 0 {
				b.WriteString(",\n")
			}
			indent(level + 1)
			writeJSON(b, e, level+1)
		}
		if len(x) > 0 {
			b.WriteString("\n")
		}
		indent(level)
		b.WriteString("]")
	default:
		panic(fmt.Sprintf("writeJSON: %T", v))
	}
}

// jsonString quotes s as json-c's json_escape_str does.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch c {
		case '"', '\\', '/':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writeYAML writes v as a YAML 1.1 document in block style (libyaml
// emits the same tree; its explicit tags are left out here).
func writeYAML(b *strings.Builder, v any, level int, inSeq bool) {
	indent := strings.Repeat("  ", level)
	switch x := v.(type) {
	case Obj:
		if len(x) == 0 {
			b.WriteString(" {}\n")
			return
		}
		if !inSeq {
			b.WriteString("\n")
		}
		for i, kv := range x {
			if !(inSeq && i == 0) {
				b.WriteString(indent)
			}
			b.WriteString(yamlScalar(kv.K) + ":")
			writeYAML(b, kv.V, level+1, false)
		}
	case []any:
		if len(x) == 0 {
			b.WriteString(" []\n")
			return
		}
		// As libyaml writes them, a mapping's sequences are not indented:
		// "- " stands where the key does.
		b.WriteString("\n")
		for _, e := range x {
			b.WriteString(strings.Repeat("  ", max(level-1, 0)) + "- ")
			writeYAML(b, e, level, true)
		}
	default:
		if !inSeq {
			b.WriteString(" ")
		}
		switch s := v.(type) {
		case nil, Unset:
			b.WriteString("null")
		case float64:
			b.WriteString(strconv.FormatFloat(s, 'f', 6, 64))
		case bool:
			b.WriteString(strconv.FormatBool(s))
		case int64:
			b.WriteString(strconv.FormatInt(s, 10))
		case string:
			b.WriteString(yamlScalar(s))
		}
		b.WriteString("\n")
	}
}

// yamlScalar writes a string plain where YAML reads it back as the same
// string, double-quoted otherwise.
func yamlScalar(s string) string {
	plain := s != "" && !strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`\n\t\\") &&
		strings.TrimSpace(s) == s && !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "?")
	switch strings.ToLower(s) {
	case "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n":
		plain = false
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		plain = false
	}
	if plain {
		return s
	}
	return strings.ReplaceAll(jsonString(s), `\/`, "/")
}
