package jobspec

import (
	"reflect"
	"testing"
)

func TestParseArray(t *testing.T) {
	cases := []struct {
		spec  string
		idx   []int
		limit int
		bad   bool
	}{
		{spec: "0-3", idx: []int{0, 1, 2, 3}},
		{spec: "1-7:2", idx: []int{1, 3, 5, 7}},
		{spec: "5,1,3,1", idx: []int{1, 3, 5}},
		{spec: "0-15%4", idx: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, limit: 4},
		{spec: "1000", idx: []int{1000}},
		{spec: "4000001", bad: true},
		{spec: "999-1000:9223372036854775807", idx: []int{999}},
		{spec: "3-1", bad: true},
		{spec: "1:2", bad: true},
		{spec: "a-b", bad: true},
		{spec: "0-3%x", bad: true},
		{spec: "", bad: true},
	}
	for _, c := range cases {
		idx, limit, err := ParseArray(c.spec)
		if c.bad {
			if err == nil {
				t.Errorf("%q accepted", c.spec)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(idx, c.idx) || limit != c.limit {
			t.Errorf("%q: %v %d %v", c.spec, idx, limit, err)
		}
	}
	if ArrayStep([]int{1, 3, 5}) != 2 || ArrayStep([]int{1, 2, 5}) != 1 {
		t.Error("ArrayStep")
	}
}

func TestCheckArray(t *testing.T) {
	if idx, err := CheckArray("0-1000", 1001); err != nil || len(idx) != 1001 {
		t.Errorf("0-1000 under 1001: %d %v", len(idx), err)
	}
	for _, spec := range []string{"0-1001", "1001", "5,2000", "x"} {
		if _, err := CheckArray(spec, 1001); err == nil || err.Error() != "Invalid job array specification" {
			t.Errorf("%s under 1001: %v", spec, err)
		}
	}
	if _, err := CheckArray("0-4999", 5000); err != nil {
		t.Errorf("a larger MaxArraySize: %v", err)
	}
}
