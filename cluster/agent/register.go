package agent

import (
	"context"
	"time"

	"hpc/cluster/api"
)

// The node registers with the leader every registerInterval, as slurmd
// does: what it runs and the ends it holds. The leader answers with what
// must not run here, which is killed; it acknowledges launches and finds
// runs the node lost (cluster/register.go).

// registerInterval is a third of SlurmdTimeout (slurmctld pings its nodes
// as often), between one and a hundred seconds.
func registerInterval(slurmdTimeout int) time.Duration {
	d := time.Duration(slurmdTimeout) * time.Second / 3
	return min(max(d, time.Second), 100*time.Second)
}

// StartRegistering registers the node now and every registerInterval
// until the daemon stops. Call it once the previous daemon's steps are
// re-attached (Reattach), so that the first registration has them.
func (ag *Agent) StartRegistering() {
	ag.wg.Add(1)
	go func() {
		defer ag.wg.Done()
		for {
			wait := registerInterval(ag.conf().SlurmdTimeout)
			if !ag.register() {
				// No answer (the daemon's API is not up yet, no leader):
				// again soon.
				wait = min(wait, time.Second)
			}
			select {
			case <-ag.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
}

// registration is what the node runs now and the ends it holds.
func (ag *Agent) registration() api.NodeRegistration {
	reg := api.NodeRegistration{Node: ag.name}
	ag.steps.mu.Lock()
	for id := range ag.steps.steps {
		// A batch step reserved but not yet given its job record is too
		// new to be acknowledged: the leader waits for its launch's answer.
		if j := ag.steps.jobs[id]; j != nil {
			reg.Jobs = append(reg.Jobs, api.JobRun{JobID: id, Run: j.StartTime})
		}
	}
	for id, m := range ag.steps.tasks {
		for sid, ts := range m {
			reg.Steps = append(reg.Steps, api.StepRun{JobID: id, StepID: sid, Run: ts.start})
		}
	}
	ag.steps.mu.Unlock()
	for _, e := range ag.outbox().pending() {
		reg.Ending = append(reg.Ending, api.JobRun{JobID: e.end.JobID, Run: e.end.Run})
	}
	return reg
}

// register sends one registration and kills what the leader says must
// not run here; false if the leader did not answer.
func (ag *Agent) register() bool {
	addr, err := ag.localAPI()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ag.ctx, 10*time.Second)
	defer cancel()
	var resp api.RegistrationResponse
	if err := ag.peers.CallNode(ctx, addr, "/internal/register", ag.registration(), &resp); err != nil {
		if ag.ctx.Err() == nil {
			ag.log.Debug("registration failed", "err", err)
		}
		return false
	}
	for _, k := range resp.Kill {
		ag.steps.mu.Lock()
		s, j := ag.steps.steps[k.JobID], ag.steps.jobs[k.JobID]
		ag.steps.mu.Unlock()
		if s != nil && j != nil && j.StartTime.Equal(k.Run) {
			ag.log.Warn("the controller no longer runs this job here: killing it", "job", k.JobID)
			s.Kill(ag.conf().KillWaitTime())
		}
	}
	done := map[api.JobRun]bool{}
	for _, k := range resp.KillSteps {
		run := api.JobRun{JobID: k.JobID, Run: k.Run}
		if !done[run] {
			done[run] = true
			ag.log.Warn("the controller no longer runs this job here: killing its steps", "job", k.JobID)
			go ag.cleanupLocal(k.JobID, k.Run) // steps.go
		}
	}
	return true
}
