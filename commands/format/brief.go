package format

import (
	"cmp"
	"strings"
)

// briefLetters are the squeue -o letters whose values come from an
// api.JobBrief's fields alone (TestBriefColumnsAsWhole checks each
// against whole jobs); briefSortKeys likewise for -S.
const (
	briefLetters  = "aAdDeFHiIjJkKlLMNoOpPqQrRstTuUvwWXyz"
	briefSortKeys = "dDeHiIjJlLMNpPQStTuUvz"
)

// BriefSuffices reports whether squeue's listing with these options
// reads nothing but an api.JobBrief's fields, so that it may ask the
// controller for briefs (api.Client.JobsBrief) instead of whole jobs.
// -O formats ask for whole jobs.
func BriefSuffices(o SqueueOptions) bool {
	for _, f := range o.fields() {
		if f.Name != "" || f.Letter != 0 && strings.IndexByte(briefLetters, f.Letter) < 0 {
			return false
		}
	}
	keys, _ := parseSort(cmp.Or(o.Sort, DefaultSqueueSort))
	for _, k := range keys {
		if strings.IndexByte(briefSortKeys, k.letter) < 0 {
			return false
		}
	}
	return true
}
