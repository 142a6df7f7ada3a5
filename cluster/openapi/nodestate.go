package openapi

import (
	"strings"

	"hpc/cluster/api"
)

// Node state bases and flags, with Slurm's numeric values (slurm.h); sinfo
// sorts its lines by the combined number.
const (
	NodeBaseUnknown   uint32 = 0
	NodeBaseDown      uint32 = 1
	NodeBaseIdle      uint32 = 2
	NodeBaseAllocated uint32 = 3
	NodeBaseMixed     uint32 = 5
	NodeBaseFuture    uint32 = 6

	FlagCloud         uint32 = 1 << 7
	flagResume        uint32 = 1 << 8
	FlagDrain         uint32 = 1 << 9
	FlagCompleting    uint32 = 1 << 10
	FlagNoRespond     uint32 = 1 << 11
	FlagPoweredDown   uint32 = 1 << 12
	FlagFail          uint32 = 1 << 13
	FlagPoweringUp    uint32 = 1 << 14
	FlagMaint         uint32 = 1 << 15
	FlagRebootReq     uint32 = 1 << 16
	FlagPoweringDown  uint32 = 1 << 18
	FlagRebootIssued  uint32 = 1 << 20
	FlagPlanned       uint32 = 1 << 21
	FlagPowerDown     uint32 = 1 << 23
	flagPowerUp       uint32 = 1 << 24
	FlagReserved      uint32 = 1 << 5
	FlagPerfCtrs      uint32 = 1 << 4
	flagDynamicFuture uint32 = 1 << 19
	flagDynamicNorm   uint32 = 1 << 26
	flagInvalidReg    uint32 = 1 << 22
)

var nodeBaseNames = []struct {
	v    uint32
	name string
}{
	{NodeBaseUnknown, "UNKNOWN"},
	{NodeBaseDown, "DOWN"},
	{NodeBaseIdle, "IDLE"},
	{NodeBaseAllocated, "ALLOCATED"},
	{NodeBaseMixed, "MIXED"},
	{NodeBaseFuture, "FUTURE"},
}

// nodeFlagNames is in Slurm's order for "State=IDLE+DRAIN+NOT_RESPONDING".
var nodeFlagNames = []struct {
	v    uint32
	name string
}{
	{FlagCloud, "CLOUD"},
	{FlagCompleting, "COMPLETING"},
	{FlagDrain, "DRAIN"},
	{flagDynamicFuture, "DYNAMIC_FUTURE"},
	{flagDynamicNorm, "DYNAMIC_NORM"},
	{flagInvalidReg, "INVALID_REG"},
	{FlagFail, "FAIL"},
	{FlagMaint, "MAINTENANCE"},
	{FlagPowerDown, "POWER_DOWN"},
	{flagPowerUp, "POWER_UP"},
	{FlagPerfCtrs, "PERFCTRS"},
	{FlagPoweredDown, "POWERED_DOWN"},
	{FlagRebootReq, "REBOOT_REQUESTED"},
	{FlagRebootIssued, "REBOOT_ISSUED"},
	{FlagReserved, "RESERVED"},
	{flagResume, "RESUME"},
	{FlagNoRespond, "NOT_RESPONDING"},
	{FlagPlanned, "PLANNED"},
	{FlagPoweringUp, "POWERING_UP"},
	{FlagPoweringDown, "POWERING_DOWN"},
}

// NodeState is a node state as Slurm keeps it: a base and flag bits.
type NodeState uint32

func (s NodeState) Base() uint32 { return uint32(s) & 0xf }

func (s NodeState) Has(flag uint32) bool { return uint32(s)&flag != 0 }

func (s NodeState) withBase(b uint32) NodeState {
	return NodeState(uint32(s)&^0xf | b)
}

// ParseNodeState reads api.Node.State. Besides the plain bases (IDLE,
// MIXED, ALLOCATED, DOWN, UNKNOWN) it accepts scontrol's complete form
// ("IDLE+DRAIN+NOT_RESPONDING"), a trailing '*' for a node that does not
// respond ("DOWN*"), and DRAINED/DRAINING/DRAIN as bases. Case is ignored.
func ParseNodeState(s string) NodeState {
	s = strings.ToUpper(strings.TrimSpace(s))
	var st uint32
	if strings.HasSuffix(s, "*") {
		st |= FlagNoRespond
		s = strings.TrimSuffix(s, "*")
	}
	parts := strings.Split(s, "+")
	switch parts[0] {
	case "DRAINED", "DRAIN":
		st |= NodeBaseIdle | FlagDrain
	case "DRAINING":
		st |= NodeBaseAllocated | FlagDrain
	case "ALLOC":
		st |= NodeBaseAllocated
	case "MIX":
		st |= NodeBaseMixed
	default:
		for _, b := range nodeBaseNames {
			if b.name == parts[0] {
				st |= b.v
			}
		}
	}
	for _, p := range parts[1:] {
		for _, f := range nodeFlagNames {
			if f.name == p {
				st |= f.v
			}
		}
	}
	return NodeState(st)
}

// EffectiveNodeState is the state with MIXED worked out from the CPU count,
// as scontrol and sinfo do: a node using some but not all of its CPUs is
// MIXED. sinfo leaves draining nodes alone (forSinfo).
func EffectiveNodeState(n api.Node, forSinfo bool) NodeState {
	st := ParseNodeState(n.State)
	if forSinfo && st.Has(FlagDrain) {
		return st
	}
	if n.AllocCPUs > 0 && n.AllocCPUs < n.CPUs {
		st = st.withBase(NodeBaseMixed)
	}
	return st
}

// Complete is node_state_string_complete: "IDLE", "DOWN+NOT_RESPONDING".
func (s NodeState) Complete() string {
	name := "INVALID"
	for _, b := range nodeBaseNames {
		if b.v == s.Base() {
			name = b.name
		}
	}
	for _, f := range nodeFlagNames {
		if s.Has(f.v) {
			name += "+" + f.name
		}
	}
	return name
}

// stateSuffix is the mark Slurm appends to a state name for a flag:
// $ maintenance, ^ reboot issued, @ reboot requested, # powering up,
// % powering down, ~ powered down, ! power down, * not responding.
func (s NodeState) stateSuffix() (string, bool) {
	switch {
	case s.Has(FlagMaint):
		return "$", true
	case s.Has(FlagRebootIssued):
		return "^", true
	case s.Has(FlagRebootReq):
		return "@", true
	case s.Has(FlagPoweringUp):
		return "#", true
	case s.Has(FlagPoweringDown):
		return "%", true
	case s.Has(FlagPoweredDown):
		return "~", true
	case s.Has(FlagPowerDown):
		return "!", true
	case s.Has(FlagNoRespond):
		return "*", true
	}
	return "", false
}

// Name is the state's name: long, node_state_string ("IDLE", "DOWN*",
// "DRAINED", "ALLOCATED+"), or compact, node_state_string_compact ("IDLE", "DOWN*", "DRAIN", "ALLOC"). sinfo
// prints them in lower case.
func (s NodeState) Name(compact bool) string {
	pick := func(long, short string) string {
		if compact {
			return short
		}
		return long
	}
	base := s.Base()
	busy := base == NodeBaseAllocated || base == NodeBaseMixed
	if s.Has(FlagMaint) && !s.Has(FlagDrain) && !busy && base != NodeBaseDown {
		if s.Has(FlagNoRespond) {
			return "MAINT*"
		}
		return "MAINT"
	}
	if (s.Has(FlagRebootReq) || s.Has(FlagRebootIssued)) && !busy {
		switch {
		case s.Has(FlagRebootIssued):
			return pick("REBOOT^", "BOOT^")
		case s.Has(FlagNoRespond):
			return pick("REBOOT*", "BOOT*")
		}
		return pick("REBOOT", "BOOT")
	}
	suf, _ := s.stateSuffix()
	if s.Has(FlagDrain) {
		if s.Has(FlagCompleting) || busy {
			return pick("DRAINING", "DRNG") + suf
		}
		return pick("DRAINED", "DRAIN") + suf
	}
	if s.Has(FlagFail) {
		nr := ""
		if s.Has(FlagNoRespond) {
			nr = "*"
		}
		if s.Has(FlagCompleting) || base == NodeBaseAllocated {
			return pick("FAILING", "FAILG") + nr
		}
		return "FAIL" + nr
	}
	switch base {
	case NodeBaseDown:
		return "DOWN" + suf
	case NodeBaseAllocated:
		if suf == "" && s.Has(FlagCompleting) {
			suf = "+"
		}
		return pick("ALLOCATED", "ALLOC") + suf
	}
	if s.Has(FlagCompleting) {
		return pick("COMPLETING", "COMP") + suf
	}
	switch base {
	case NodeBaseIdle:
		if suf == "" {
			switch {
			case s.Has(FlagPerfCtrs):
				return pick("PERFCTRS", "NPC")
			case s.Has(FlagReserved):
				return pick("RESERVED", "RESV")
			case s.Has(FlagPlanned):
				return pick("PLANNED", "PLND")
			}
		}
		return "IDLE" + suf
	case NodeBaseMixed:
		if suf == "" && s.Has(FlagPlanned) {
			suf = "-"
		}
		return pick("MIXED", "MIX") + suf
	case NodeBaseFuture:
		return pick("FUTURE", "FUTR") + suf
	}
	if s.Has(flagResume) {
		return pick("RESUME", "RESM")
	}
	if s.Has(FlagNoRespond) {
		return pick("UNKNOWN*", "UNK*")
	}
	return pick("UNKNOWN", "UNK")
}
