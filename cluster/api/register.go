package api

import "time"

// JobRun names one run of a job: its id and its start time (a requeued
// job's next run starts later).
type JobRun struct {
	JobID uint64    `json:"job_id"`
	Run   time.Time `json:"run"`
}

// StepRun names a step of one run of a job.
type StepRun struct {
	JobID  uint64    `json:"job_id"`
	StepID uint32    `json:"step_id"`
	Run    time.Time `json:"run"`
}

// NodeRegistration is what a node's daemon tells the leader every few
// seconds, as slurmd registers with slurmctld: the batch jobs and the srun
// steps it runs, and the job ends it holds that are not yet committed.
type NodeRegistration struct {
	Node   string    `json:"node"`
	Jobs   []JobRun  `json:"jobs,omitempty"`
	Steps  []StepRun `json:"steps,omitempty"`
	Ending []JobRun  `json:"ending,omitempty"`
}

// RegistrationResponse is the leader's answer: what the node runs that
// must not run (the job or run ended, or is another node's).
type RegistrationResponse struct {
	Kill      []JobRun  `json:"kill,omitempty"`
	KillSteps []StepRun `json:"kill_steps,omitempty"`
}

// StepEndReport is a step's end as its launcher reports it to the leader.
type StepEndReport struct {
	JobID uint64 `json:"job_id"`
	Step  Step   `json:"step"`
}
