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
// outside an array and for an array's record of its pending tasks, as
// Slurm prints NO_VAL), %% a percent sign; a number
// after the % zero-pads numbers to that width ("%4j" 0012). A pattern with
// a backslash is not expanded: its backslashes go ("\\" is one). Relative
// paths are taken from the job's working directory. An empty pattern gives
// def (itself a pattern, or an already expanded path).
func ExpandPath(pattern string, j *api.Job, def string) string {
	if pattern == "" {
		pattern = def
	}
	first := ""
	if len(j.Alloc) > 0 {
		first = j.Alloc[0].Node
	}
	return expand(pattern, j, StepPath{Step: -1, Node: first, Dir: j.Spec.WorkDir})
}

// StepPath is what a step's file pattern (srun's -o/-e/-i) names besides
// its job: the step, and the task whose file it is.
type StepPath struct {
	// Step is the step id; -1 is the batch step.
	Step int
	// Task is the task id, NodeIndex the index of its node among the
	// step's nodes and Node that node's name.
	Task, NodeIndex int
	Node            string
	// Dir is where a relative path is taken from.
	Dir string
}

// ExpandStepPath turns srun's -o/-e/-i pattern into task v.Task's path:
// as ExpandPath, with %s the step id, %J "job.step", %t the task, %n its
// node's index in the step and %N that node.
func ExpandStepPath(pattern string, j *api.Job, v StepPath) string {
	return expand(pattern, j, v)
}

// Uses reports whether a pattern has one of the specifiers letters
// ("tnN": a file per task or per node; "sJ": one per step).
func Uses(pattern, letters string) bool {
	if strings.Contains(pattern, `\`) {
		return false
	}
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '%' {
			continue
		}
		k := i + 1
		for k < len(pattern) && pattern[k] >= '0' && pattern[k] <= '9' {
			k++
		}
		if k == len(pattern) {
			return false
		}
		if strings.IndexByte(letters, pattern[k]) >= 0 {
			return true
		}
		i = k
	}
	return false
}

// expand expands pattern for job j and v.
func expand(pattern string, j *api.Job, v StepPath) string {
	p := pattern
	if strings.Contains(p, `\`) {
		p = unescape(p)
	} else {
		p = substitute(p, j, v)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(v.Dir, p)
	}
	return p
}

// unescape drops a pattern's backslashes, a doubled one giving one.
func unescape(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			i++
			if i == len(p) {
				break
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// substitute replaces a pattern's specifiers.
func substitute(pattern string, j *api.Job, v StepPath) string {
	id := strconv.FormatUint(j.ID, 10)
	pad := func(s string, width int) string {
		if len(s) < width {
			s = strings.Repeat("0", width-len(s)) + s
		}
		return s
	}
	step := "batch"
	if v.Step >= 0 {
		step = strconv.Itoa(v.Step)
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
			b.WriteString(pad(id, width) + "." + step)
		case 'x':
			b.WriteString(j.Spec.Name)
		case 'u':
			b.WriteString(j.User)
		case 'N':
			b.WriteString(v.Node)
		case 'n':
			b.WriteString(pad(strconv.Itoa(v.NodeIndex), width))
		case 't':
			b.WriteString(pad(strconv.Itoa(v.Task), width))
		case 's':
			if v.Step >= 0 {
				b.WriteString(pad(step, width))
			} else {
				b.WriteString(step)
			}
		case 'a':
			if j.ArrayJobID != 0 && j.ArrayTasks == "" {
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
	return b.String()
}
