package format

import (
	"fmt"
	"io"

	"hpc/cluster/api"
)

// TriggerHeader is strigger --get's header line.
const TriggerHeader = "TRIG_ID RES_TYPE   RES_ID TYPE                                OFFSET USER     FLAGS PROGRAM\n"

// Triggers prints strigger --get's table: a header (unless noHeader) and
// one line per trigger; nothing at all when there is none. userName gives
// the USER column ("unknown" for a uid without a name).
func Triggers(w io.Writer, ts []api.Trigger, noHeader bool, userName func(uint32) string) {
	for i := range ts {
		t := &ts[i]
		if i == 0 && !noHeader {
			io.WriteString(w, TriggerHeader)
		}
		res := t.ResID
		if res == "" {
			res = "(null)" // what C's printf makes of a missing id
		}
		flags := ""
		if t.Perm {
			flags = "PERM"
		}
		fmt.Fprintf(w, "%7d %-9s %7s %-35s %6d %-8s %-5s %s\n",
			t.ID, t.ResType, res, t.TypeName(), t.Offset, userName(t.UID), flags, t.Program)
	}
}
