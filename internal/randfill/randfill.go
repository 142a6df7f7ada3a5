// Package randfill sets values to random contents, every exported field
// of a struct in turn, for tests that must hold whatever a record holds
// (a job list read as encoding/json reads it, squeue's brief records).
// It imports nothing of the project.
package randfill

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"time"
)

// Fill sets v to random values: every field, most of them not zero.
// Strings mix the awkward (invalid UTF-8, control characters, HTML,
// quotes) with host lists; times fall anywhere in 1970-2096, in UTC.
func Fill(rng *rand.Rand, v reflect.Value) { fill(rng, v, 0) }

func fill(rng *rand.Rand, v reflect.Value, depth int) {
	if rng.IntN(6) == 0 || depth > 6 {
		return // left zero
	}
	switch v.Kind() {
	case reflect.String:
		pieces := []string{"a", "node[1-4]", "\n", "\"", "\\", "\x00", "\xff", "é", "💡", "</script>", " "}
		var b strings.Builder
		for range rng.IntN(5) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		v.SetString(b.String())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.Uint64()) >> (64 - v.Type().Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(rng.Uint64() >> (64 - v.Type().Bits()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(rng.IntN(1e6)) / 8)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(rng, v.Elem(), depth+1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), rng.IntN(3), 3)
		for i := range s.Len() {
			fill(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(3) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(rng, k, depth+1)
			fill(rng, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(rng, v.Field(i), depth+1)
			}
		}
	}
}
