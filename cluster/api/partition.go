package api

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Partition change actions (PartitionRequest.Action).
const (
	PartitionCreate = "create"
	PartitionUpdate = "update"
	PartitionDelete = "delete"
)

// Errors of the partition and configuration routes (Slurm's texts).
const (
	// ErrPartitionInUse (ESLURM_PARTITION_IN_USE): scontrol delete
	// partition of a partition jobs are pending or running in.
	ErrPartitionInUse = "Partition is in use"
	// ErrNeedRestart (ESLURM_NEED_RESTART): a reconfigure that changes the
	// nodes, the controllers or the ports.
	ErrNeedRestart = "The node configuration changes that were made require restart of the slurmctld daemon to take effect"
)

// PartitionRequest is scontrol create, update or delete partition: Set
// holds the Key=Value words as given (PartitionName's left out), keys as
// a PartitionName line of slurm.conf takes them.
type PartitionRequest struct {
	Action string      `json:"action"`
	Name   string      `json:"name"`
	Set    [][2]string `json:"set,omitempty"`
}

// ConfigFile is the running configuration as a slurm.conf (scontrol write
// config): the file's text with the live partitions' lines, and the time
// of its last change.
type ConfigFile struct {
	Text       string    `json:"text"`
	LastUpdate time.Time `json:"last_update"`
}

// PidInfo is scontrol pidinfo's answer: the job a process of this node
// belongs to, and when that job's time ends (zero: no limit).
type PidInfo struct {
	JobID   uint64    `json:"job_id"`
	EndTime time.Time `json:"end_time,omitzero"`
}

// ChangePartition creates, updates or deletes a partition.
func (c *Client) ChangePartition(ctx context.Context, req PartitionRequest) error {
	return c.do(ctx, http.MethodPost, "/api/partition", req, nil)
}

// Reconfigure makes the cluster re-read slurm.conf (scontrol reconfigure).
func (c *Client) Reconfigure(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/api/reconfigure", struct{}{}, nil)
}

// ConfigFile returns the running configuration as a slurm.conf.
func (c *Client) ConfigFile(ctx context.Context) (*ConfigFile, error) {
	var out ConfigFile
	err := c.do(ctx, http.MethodGet, "/api/config/file", nil, &out)
	return &out, err
}

// PidInfo asks this node which job the process pid belongs to.
func (c *Client) PidInfo(ctx context.Context, pid int) (*PidInfo, error) {
	var out PidInfo
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/api/pidinfo?pid=%d", pid), nil, &out)
	return &out, err
}
