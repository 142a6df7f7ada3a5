package cluster

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	"hpc/cluster/peer"
)

// Steps (srun inside an allocation, JOBID.0, JOBID.1, ...): their API
// routes and where their tasks go in the allocation live here; their
// records and Raft operations in cluster/fsm (steps.go there). The
// launcher (steplauncher.go), the leader (stepleader.go) and the agents
// (cluster/agent: steps.go there) run them and carry their output;
// agent/stepenv.go builds the environment of every step, the batch step's
// included.
//
// How a step travels: srun asks its node (unix socket, POST /api/step/run).
// That node, the step's launcher, asks the leader to create the step
// (/api/step/create: checks, layout, fsm.StepStart through Raft), picks
// MASTER_PORT on the step's first node, then asks the agent of every node
// of the step to start its tasks (/internal/step/launch). Each agent
// answers with a stream of output and task ends; the launcher merges them
// into its answer to srun, and when every node has finished it commits
// fsm.StepEnd. srun's Ctrl-C goes to the launcher (/api/step/signal), which
// signals the agents. If srun goes away, the launcher kills the step. A
// daemon restarted under a step does not end it: an agent's share waits
// for its launcher to attach again (/internal/step/attach, agent/steprelay.go),
// and srun attaches to its node's next daemon (Attach), which becomes the
// step's launcher. sattach reaches a running step through any node's
// daemon (/api/step/sattach, passed on to the launcher): the launcher
// hands its merged output to the step's attached readers too, each with a
// bounded queue that drops what a slow reader cannot take (sattach.go).

// stepPlan is where a step's tasks go.
type stepPlan struct {
	Nodes       []string
	Tasks       []int // per node
	CPUsPerTask int
	Warning     string
}

// planStep decides where a step's tasks run in its job's allocation, as
// srun does inside one: by default every node of the job and the job's
// tasks; -N picks that many nodes (those of -w first), -n that many tasks
// (one per node at least, then each node filled to its CPUs in order: the
// block distribution); --ntasks-per-node puts that many on each node.
// With -O (the step's, or its job's: Slurm's SLURM_OVERCOMMIT) a node
// takes more tasks than its CPUs: once every node is full, the tasks left
// go round the nodes one at a time, as Slurm's block layout spreads them.
// Errors read like Slurm's.
func planStep(j *api.Job, req *api.StepRequest) (stepPlan, error) {
	p, err := planStepAround(j, req, nil)
	if err != nil || !req.Exclusive {
		return p, err
	}
	// An exclusive step that fits the job goes on CPUs no other exclusive
	// step holds; while there are not enough, its srun waits.
	p, err = planStepAround(j, req, j.HeldCPUs())
	if err != nil {
		return p, &api.Error{Message: api.ErrNodesBusy}
	}
	return p, nil
}

// planStepAround is planStep with busy CPUs (by node) taken.
func planStepAround(j *api.Job, req *api.StepRequest, busy map[string]int) (stepPlan, error) {
	var p stepPlan
	notAvail := &api.Error{Message: api.ErrConfigUnavailable}
	p.CPUsPerTask = req.CPUsPerTask
	if p.CPUsPerTask <= 0 {
		p.CPUsPerTask = max(j.Spec.CPUsPerTask, 1)
	}
	if req.Nodes < 0 || req.NTasks < 0 || req.NTasksPerNode < 0 {
		return p, &api.Error{Message: api.ErrNodeCountInvalid}
	}
	index := map[string]int{}
	for i, a := range j.Alloc {
		index[a.Node] = i
	}
	// The candidate nodes in order: those of -w first.
	var order []int
	named := 0
	if req.NodeList != "" {
		names, err := hostlist.Expand(req.NodeList)
		if err != nil {
			return p, &api.Error{Message: api.ErrInvalidNodeName, Detail: err.Error()}
		}
		seen := map[int]bool{}
		for _, n := range names {
			i, ok := index[n]
			if !ok {
				return p, notAvail
			}
			if !seen[i] {
				seen[i] = true
				order = append(order, i)
			}
		}
		named = len(order)
		if req.Nodes > 0 && req.Nodes < named {
			return p, &api.Error{Message: api.ErrNodeCountInvalid}
		}
		for i := range j.Alloc {
			if !seen[i] {
				order = append(order, i)
			}
		}
	} else {
		for i := range j.Alloc {
			order = append(order, i)
		}
	}
	nnodes := len(j.Alloc)
	switch {
	case req.Nodes > 0:
		nnodes = req.Nodes
	case named > 0:
		nnodes = named
	}
	if nnodes > len(j.Alloc) || nnodes == 0 {
		return p, notAvail
	}
	ntasks := req.NTasks
	if ntasks == 0 {
		switch {
		case req.NTasksPerNode > 0:
			ntasks = nnodes * req.NTasksPerNode
		case req.Nodes > 0 || named > 0:
			ntasks = nnodes
		case j.Spec.NTasks > 0:
			ntasks = j.Spec.NTasks
		case req.CPUsPerTask > 0:
			for _, a := range j.Alloc[:nnodes] {
				ntasks += max(a.CPUs/p.CPUsPerTask, 1)
			}
		default:
			for _, t := range j.TasksPerNode()[:nnodes] {
				ntasks += t
			}
		}
	}
	if ntasks < nnodes {
		if req.Nodes > 0 {
			p.Warning = fmt.Sprintf("can't run %d processes on %d nodes, setting nnodes to %d", ntasks, nnodes, ntasks)
		}
		nnodes = max(ntasks, named)
		if ntasks < named {
			return p, &api.Error{Message: api.ErrNodeCountInvalid}
		}
	}
	if len(busy) > 0 {
		if req.NodeList == "" {
			// Nodes with CPUs free first, in the job's order.
			slices.SortStableFunc(order, func(a, b int) int {
				fa, fb := j.Alloc[a].CPUs-busy[j.Alloc[a].Node], j.Alloc[b].CPUs-busy[j.Alloc[b].Node]
				return cmp.Compare(min(fb, p.CPUsPerTask), min(fa, p.CPUsPerTask))
			})
		}
	}
	order = order[:nnodes]
	over := req.Overcommit || j.Spec.Overcommit
	room := make([]int, nnodes) // tasks each node can take
	for k, i := range order {
		room[k] = (j.Alloc[i].CPUs - busy[j.Alloc[i].Node]) / p.CPUsPerTask
		if room[k] == 0 && over {
			room[k] = 1
		}
		if room[k] == 0 {
			return p, &api.Error{Message: api.ErrTooManyProcessors}
		}
	}
	tasks := make([]int, nnodes)
	left := ntasks
	if req.NTasksPerNode > 0 {
		for k := range tasks {
			tasks[k] = min(req.NTasksPerNode, left)
			left -= tasks[k]
			if tasks[k] > room[k] && !over {
				return p, &api.Error{Message: api.ErrTooManyProcessors}
			}
		}
		if left > 0 {
			return p, &api.Error{Message: api.ErrTooManyProcessors}
		}
	} else {
		for k := range tasks {
			tasks[k] = 1
		}
		left -= nnodes
		for k := range tasks {
			add := min(room[k]-tasks[k], left)
			tasks[k] += add
			left -= add
		}
		if left > 0 && !over {
			return p, &api.Error{Message: api.ErrTooManyProcessors}
		}
		for k := 0; left > 0; k = (k + 1) % nnodes {
			tasks[k]++
			left--
		}
	}
	for k, i := range order {
		if tasks[k] == 0 {
			continue
		}
		p.Nodes = append(p.Nodes, j.Alloc[i].Node)
		p.Tasks = append(p.Tasks, tasks[k])
	}
	return p, nil
}

// registerStepRoutes adds the step routes to the API.
func (d *Daemon) registerStepRoutes(mux *http.ServeMux) {
	// Served by the node srun or salloc talks to.
	mux.HandleFunc("POST /api/step/run", d.localRoute(d.handleStepRun))
	mux.HandleFunc("POST /api/step/signal", d.localRoute(d.handleStepSignal))
	mux.HandleFunc("POST /api/step/input", d.localRoute(d.handleStepInput))
	// sattach: served by the step's launcher, reached through any node.
	mux.HandleFunc("POST /api/step/sattach", d.localRoute(d.handleSattach))
	mux.HandleFunc("POST /api/step/sattach/input", d.localRoute(d.handleSattachInput))
	// Served by the leader.
	mux.HandleFunc("POST /api/step/create", d.leaderRoute(d.handleStepCreate))
	mux.HandleFunc("POST /api/step/find", d.leaderRoute(d.handleStepFind))
	mux.HandleFunc("GET /api/alloc/wait", d.leaderRoute(d.handleAllocWait))
	mux.HandleFunc("POST /api/alloc/release", d.leaderRoute(d.handleRelease))
	mux.HandleFunc("POST /internal/step/end", d.nodeRoute(d.leaderRoute(d.handleStepEnd)))
}

// localRoute runs h on this node for any caller it can identify.
func (d *Daemon) localRoute(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := peer.IdentityFrom(r.Context())
		if !ok {
			peer.WriteErr(w, http.StatusUnauthorized, fmt.Errorf("cannot tell who is asking (no peer credentials)"))
			return
		}
		body, err := d.requestBody(w, r)
		if err != nil {
			bodyErr(w, err)
			return
		}
		h(w, r, id, body)
	}
}
