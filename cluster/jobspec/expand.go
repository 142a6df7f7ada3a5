package jobspec

import (
	"path/filepath"
	"strconv"
	"strings"

	"hpc/cluster/api"
)

// maxPadWidth is the widest zero padding of a number in a pattern.
const maxPadWidth = 10

// ExpandPath turns an -o/-e pattern into a path, as sbatch's filename
// patterns go: %j job id, %J job id with step ("12.batch"), %x job name,
// %u user, %N the first node, %n node index (0), %t task (0), %s step
// ("batch"), %A array master id (the job id), %a array index (4294967294
// outside an array, as Slurm prints NO_VAL), %% a percent sign; a number
// after the % zero-pads numbers to that width ("%4j" 0012). Relative paths
// are taken from the job's working directory. An empty pattern gives def
// (itself a pattern, or an already expanded path).
func ExpandPath(pattern string, j *api.Job, def string) string {
	if pattern == "" {
		pattern = def
	}
	first := ""
	if len(j.Alloc) > 0 {
		first = j.Alloc[0].Node
	}
	id := strconv.FormatUint(j.ID, 10)
	pad := func(s string, width int) string {
		if len(s) < width {
			s = strings.Repeat("0", width-len(s)) + s
		}
		return s
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' || i+1 == len(pattern) {
			b.WriteByte(c)
			continue
		}
		k := i + 1
		for k < len(pattern) && pattern[k] >= '0' && pattern[k] <= '9' {
			k++
		}
		// Slurm pads to 10 digits at most (its MAX_WIDTH); a longer
		// width is 10, so no pattern can make a huge path.
		width := 0
		if k > i+1 {
			width = maxPadWidth
			if w, err := strconv.Atoi(pattern[i+1 : k]); err == nil && w < maxPadWidth {
				width = w
			}
		}
		if k == len(pattern) {
			b.WriteString(pattern[i:])
			break
		}
		switch pattern[k] {
		case 'j':
			b.WriteString(pad(id, width))
		case 'A':
			if j.ArrayJobID != 0 {
				b.WriteString(pad(strconv.FormatUint(j.ArrayJobID, 10), width))
			} else {
				b.WriteString(pad(id, width))
			}
		case 'J':
			b.WriteString(pad(id, width) + ".batch")
		case 'x':
			b.WriteString(j.Spec.Name)
		case 'u':
			b.WriteString(j.User)
		case 'N':
			b.WriteString(first)
		case 'n', 't':
			b.WriteString(pad("0", width))
		case 's':
			b.WriteString("batch")
		case 'a':
			if j.ArrayJobID != 0 {
				b.WriteString(pad(strconv.Itoa(j.ArrayTaskID), width))
			} else {
				b.WriteString(pad("4294967294", width))
			}
		case '%':
			b.WriteByte('%')
		default:
			b.WriteString(pattern[i : k+1])
		}
		i = k
	}
	p := b.String()
	if !filepath.IsAbs(p) {
		p = filepath.Join(j.Spec.WorkDir, p)
	}
	return p
}
