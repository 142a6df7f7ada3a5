package api

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mailru/easyjson"
)

// fill sets every field of v (a pointer) to a value that is not its zero,
// through structs, pointers, slices and maps, so that a field the
// generated decoder does not know is seen.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 5, 0, *n%60, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("s\n\"é" + string(rune('a'+*n%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n % 100))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	}
}

// TestJobDecoderUpToDate: the generated decoder (job_easyjson.go, `make
// generate`) reads every field of a Job as encoding/json does, and its
// encoder writes every field so. A field
// added to Job, or to a type in it, without generating again fails here.
func TestJobDecoderUpToDate(t *testing.T) {
	var j Job
	n := 0
	fill(reflect.ValueOf(&j).Elem(), &n)
	b, err := json.Marshal(&j)
	if err != nil {
		t.Fatal(err)
	}
	var std, gen Job
	if err := json.Unmarshal(b, &std); err != nil {
		t.Fatal(err)
	}
	if err := easyjson.Unmarshal(b, &gen); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(std, gen) {
		a, _ := json.Marshal(&std)
		c, _ := json.Marshal(&gen)
		t.Errorf("the generated decoder differs from encoding/json (run make generate):\nstd %s\ngen %s", a, c)
	}
	// The generated encoder writes what encoding/json reads back the same.
	var back Job
	out, err := easyjson.Marshal(&j)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, std) {
		t.Errorf("the generated encoder's job reads back differently (%v):\n%s\nwant\n%s", err, out, b)
	}
	// And zero values and nulls as encoding/json reads them.
	for _, s := range []string{`{}`, `{"id":3,"spec":null,"steps":null,"requeue":null}`, `{"spec":{"requeue":false,"env":[]}}`} {
		var a, c Job
		errA, errC := json.Unmarshal([]byte(s), &a), easyjson.Unmarshal([]byte(s), &c)
		if (errA == nil) != (errC == nil) || !reflect.DeepEqual(a, c) {
			t.Errorf("%s: std %+v (%v), generated %+v (%v)", s, a, errA, c, errC)
		}
	}
}
