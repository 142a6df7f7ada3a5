package commands

import (
	"fmt"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// scontrol create, update and delete partition, as Slurm 22.05's scontrol
// reads them: its keywords (prefixes of at least the lengths below), its
// checks of values, its error texts. The controller checks the rest, with
// the keys as a PartitionName line of slurm.conf takes them.

// partKey is one of scontrol's partition keywords: the key it sets in
// slurm.conf's spelling, and the shortest prefix it accepts.
type partKey struct {
	word string
	min  int
	key  string // slurm.conf's key; "" for PartitionName
}

// partKeys in scontrol's order: the first keyword the tag names wins.
var partKeys = []partKey{
	{"PartitionName", 2, ""}, {"MaxTime", 4, "MaxTime"}, {"CpuBind", 7, "CpuBind"},
	{"DefaultTime", 8, "DefaultTime"}, {"MaxNodes", 4, "MaxNodes"}, {"MinNodes", 2, "MinNodes"},
	{"MaxCPUsPerNode", 4, "MaxCPUsPerNode"}, {"Default", 7, "Default"},
	{"DisableRootJobs", 1, "DisableRootJobs"}, {"ExclusiveUser", 1, "ExclusiveUser"},
	{"Hidden", 1, "Hidden"}, {"LLN", 1, "LLN"}, {"RootOnly", 3, "RootOnly"}, {"ReqResv", 3, "ReqResv"},
	{"OverSubscribe", 5, "OverSubscribe"}, {"Shared", 2, "OverSubscribe"}, {"OverTimeLimit", 5, "OverTimeLimit"},
	{"PreemptMode", 3, "PreemptMode"}, {"Priority", 3, "Priority"}, {"PriorityJobFactor", 3, "PriorityJobFactor"},
	{"PriorityTier", 3, "PriorityTier"}, {"State", 2, "State"}, {"Nodes", 1, "Nodes"},
	{"AllowGroups", 6, "AllowGroups"}, {"AllowAccounts", 6, "AllowAccounts"}, {"AllowQos", 6, "AllowQos"},
	{"DenyAccounts", 5, "DenyAccounts"}, {"DenyQos", 5, "DenyQos"}, {"AllocNodes", 6, "AllocNodes"},
	{"Alternate", 3, "Alternate"}, {"GraceTime", 5, "GraceTime"}, {"DefMemPerCPU", 10, "DefMemPerCPU"},
	{"DefMemPerNode", 10, "DefMemPerNode"}, {"MaxMemPerCPU", 10, "MaxMemPerCPU"},
	{"MaxMemPerNode", 10, "MaxMemPerNode"}, {"QoS", 3, "QOS"}, {"JobDefaults", 4, "JobDefaults"},
	{"TresBillingWeights", 1, "TRESBillingWeights"},
}

// yesNoKeys take YES or NO.
var yesNoKeys = map[string]bool{"Default": true, "DisableRootJobs": true, "ExclusiveUser": true, "Hidden": true,
	"LLN": true, "RootOnly": true, "ReqResv": true}

// partOptions parses scontrol's partition words into the partition's name
// and the Key=Value pairs the controller applies; count is how many words
// set something, PartitionName's included. ok is false once an error was
// printed.
func (s *scontrol) partOptions(args []string) (name string, set [][2]string, count int, ok bool) {
	for _, arg := range args {
		tag, val, found := strings.Cut(arg, "=")
		if !found {
			s.fail("%s: error: Invalid input: %s  Request aborted\n", s.prog, arg)
			return "", nil, 0, false
		}
		var k *partKey
		for i := range partKeys {
			if keyword(tag, partKeys[i].word, partKeys[i].min) {
				k = &partKeys[i]
				break
			}
		}
		if k == nil {
			s.fail("%s: error: Update of this parameter is not supported: %s\n\n%s: error: Request aborted\n", s.prog, arg, s.prog)
			return "", nil, 0, false
		}
		count++
		v, good := s.partValue(k.key, val, arg)
		if !good {
			return "", nil, 0, false
		}
		switch k.key {
		case "":
			name = val
		case "Priority": // scontrol's Priority sets both
			set = append(set, [2]string{"PriorityTier", v}, [2]string{"PriorityJobFactor", v})
		default:
			set = append(set, [2]string{k.key, v})
		}
	}
	return name, set, count, true
}

// partValue checks a value as scontrol does and returns it as slurm.conf
// spells it.
func (s *scontrol) partValue(key, val, arg string) (string, bool) {
	switch {
	case key == "MaxTime" || key == "DefaultTime":
		if strings.EqualFold(val, "INFINITE") || strings.EqualFold(val, "UNLIMITED") {
			return "UNLIMITED", true
		}
		if m, err := config.ParseTime(val); err != nil || m < config.Unlimited {
			s.fail("%s: error: Invalid input %s\n", s.prog, arg)
			return "", false
		}
	case yesNoKeys[key]:
		switch {
		case keyword(val, "YES", 1):
			return "YES", true
		case keyword(val, "NO", 1):
			return "NO", true
		}
		s.fail("%s: error: Invalid input: %s\n%s: error: Acceptable %s values are YES and NO\n", s.prog, arg, s.prog, key)
		return "", false
	case key == "State":
		for _, st := range []string{"INACTIVE", "DOWN", "UP", "DRAIN"} {
			if keyword(val, st, 1) {
				return st, true
			}
		}
		s.fail("%s: error: Invalid input: %s\n%s: error: Acceptable State values are UP, DOWN, DRAIN and INACTIVE\n", s.prog, arg, s.prog)
		return "", false
	}
	return val, true
}

// create is scontrol create: partitions (nodes and reservations are not
// hpc's).
func (s *scontrol) create(argv []string) {
	if len(argv) < 2 {
		s.fail("too few arguments for keyword:%s\n", argv[0])
		return
	}
	args := argv[1:]
	for _, arg := range args {
		tag, _, _ := strings.Cut(arg, "=")
		switch {
		case keyword(tag, "NodeName", 3), keyword(tag, "ReservationName", 3):
			s.fail("%s: error: create %s: hpc does not support this yet\n", s.prog, tag)
			return
		case keyword(tag, "PartitionName", 3):
			s.createPartition(args)
			return
		}
	}
	s.fail("%s: error: Invalid creation entity: %s\n", s.prog, args[0])
}

func (s *scontrol) createPartition(args []string) {
	name, set, count, ok := s.partOptions(args)
	switch {
	case !ok:
		return
	case name == "":
		s.fail("%s: error: PartitionName must be given.\n", s.prog)
		return
	case strings.EqualFold(name, "default"):
		s.fail("%s: error: PartitionName cannot be \"DEFAULT\".\n", s.prog)
		return
	case count == 0:
		s.fail("%s: error: No parameters specified\n", s.prog)
		return
	}
	if err := s.changePartition(api.PartitionRequest{Action: api.PartitionCreate, Name: name, Set: set}); err != nil {
		s.perror("Error creating the partition", err)
	}
}

// updatePartition is scontrol update PartitionName=X Key=Value...
func (s *scontrol) updatePartition(args []string) {
	name, set, count, ok := s.partOptions(args)
	switch {
	case !ok:
		return
	case name == "":
		s.fail("%s: error: PartitionName must be given.\n", s.prog)
		return
	case count <= 1:
		s.fail("%s: error: No changes specified\n", s.prog)
		return
	}
	if err := s.changePartition(api.PartitionRequest{Action: api.PartitionUpdate, Name: name, Set: set}); err != nil {
		s.perror("slurm_update error", err)
	}
}

// delete is scontrol delete PartitionName=X (or PartitionName X).
func (s *scontrol) delete(argv []string) {
	args := argv[1:]
	var tag, val string
	switch len(args) {
	case 1:
		var found bool
		if tag, val, found = strings.Cut(args[0], "="); found {
			break
		}
		fallthrough
	default:
		s.fail("%s: error: Proper format is 'delete <ENTITY>=<ID>' or 'delete <ENTITY> <ID>'\n", s.prog)
		return
	case 2:
		tag, val = args[0], args[1]
	}
	switch {
	case keyword(tag, "PartitionName", 3):
		if err := s.changePartition(api.PartitionRequest{Action: api.PartitionDelete, Name: val}); err != nil {
			s.perror("delete_partition "+args[0], err)
		}
	case keyword(tag, "NodeName", 3), keyword(tag, "ReservationName", 3):
		s.fail("%s: error: delete %s: hpc does not support this yet\n", s.prog, tag)
	default:
		s.fail("Invalid deletion entity: %s\n", args[0])
	}
}

func (s *scontrol) changePartition(req api.PartitionRequest) error {
	cl, ctx, cancel, err := connect(s.e)
	if err != nil {
		return err
	}
	defer cancel()
	return cl.ChangePartition(ctx, req)
}

// perror prints an error as slurm_perror does: "what: message".
func (s *scontrol) perror(what string, err error) {
	s.status = 1
	_, msg := errText(err)
	fmt.Fprintf(s.e.Stderr, "%s: %s\n", what, msg)
}

// partitionUpdate reports whether scontrol update's words update a
// partition: they name one, and no job, step, reservation or node (which
// scontrol looks for first).
func partitionUpdate(args []string) bool {
	part := false
	for _, arg := range args {
		tag, _, _ := strings.Cut(arg, "=")
		switch {
		case keyword(tag, "JobId", 3), keyword(tag, "JobNAME", 3), keyword(tag, "StepId", 4),
			keyword(tag, "ReservationName", 3), keyword(tag, "NodeName", 3):
			return false
		case keyword(tag, "PartitionName", 3):
			part = true
		}
	}
	return part
}
