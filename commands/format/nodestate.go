package format

import (
	"strings"

	"hpc/cluster/api"
)

// Node state bases and flags, with Slurm's numeric values (slurm.h); sinfo
// sorts its lines by the combined number.
const (
	nodeBaseUnknown   uint32 = 0
	nodeBaseDown      uint32 = 1
	nodeBaseIdle      uint32 = 2
	nodeBaseAllocated uint32 = 3
	nodeBaseMixed     uint32 = 5
	nodeBaseFuture    uint32 = 6

	flagCloud         uint32 = 1 << 7
	flagResume        uint32 = 1 << 8
	flagDrain         uint32 = 1 << 9
	flagCompleting    uint32 = 1 << 10
	flagNoRespond     uint32 = 1 << 11
	flagPoweredDown   uint32 = 1 << 12
	flagFail          uint32 = 1 << 13
	flagPoweringUp    uint32 = 1 << 14
	flagMaint         uint32 = 1 << 15
	flagRebootReq     uint32 = 1 << 16
	flagPoweringDown  uint32 = 1 << 18
	flagRebootIssued  uint32 = 1 << 20
	flagPlanned       uint32 = 1 << 21
	flagPowerDown     uint32 = 1 << 23
	flagPowerUp       uint32 = 1 << 24
	flagReserved      uint32 = 1 << 5
	flagPerfCtrs      uint32 = 1 << 4
	flagDynamicFuture uint32 = 1 << 19
	flagDynamicNorm   uint32 = 1 << 26
	flagInvalidReg    uint32 = 1 << 22
)

var nodeBaseNames = []struct {
	v    uint32
	name string
}{
	{nodeBaseUnknown, "UNKNOWN"},
	{nodeBaseDown, "DOWN"},
	{nodeBaseIdle, "IDLE"},
	{nodeBaseAllocated, "ALLOCATED"},
	{nodeBaseMixed, "MIXED"},
	{nodeBaseFuture, "FUTURE"},
}

// nodeFlagNames is in Slurm's order for "State=IDLE+DRAIN+NOT_RESPONDING".
var nodeFlagNames = []struct {
	v    uint32
	name string
}{
	{flagCloud, "CLOUD"},
	{flagCompleting, "COMPLETING"},
	{flagDrain, "DRAIN"},
	{flagDynamicFuture, "DYNAMIC_FUTURE"},
	{flagDynamicNorm, "DYNAMIC_NORM"},
	{flagInvalidReg, "INVALID_REG"},
	{flagFail, "FAIL"},
	{flagMaint, "MAINTENANCE"},
	{flagPowerDown, "POWER_DOWN"},
	{flagPowerUp, "POWER_UP"},
	{flagPerfCtrs, "PERFCTRS"},
	{flagPoweredDown, "POWERED_DOWN"},
	{flagRebootReq, "REBOOT_REQUESTED"},
	{flagRebootIssued, "REBOOT_ISSUED"},
	{flagReserved, "RESERVED"},
	{flagResume, "RESUME"},
	{flagNoRespond, "NOT_RESPONDING"},
	{flagPlanned, "PLANNED"},
	{flagPoweringUp, "POWERING_UP"},
	{flagPoweringDown, "POWERING_DOWN"},
}

// nodeState is a node state as Slurm keeps it: a base and flag bits.
type nodeState uint32

func (s nodeState) base() uint32         { return uint32(s) & 0xf }
func (s nodeState) has(flag uint32) bool { return uint32(s)&flag != 0 }
func (s nodeState) withBase(b uint32) nodeState {
	return nodeState(uint32(s)&^0xf | b)
}

// parseNodeState reads api.Node.State. Besides the plain bases (IDLE,
// MIXED, ALLOCATED, DOWN, UNKNOWN) it accepts scontrol's complete form
// ("IDLE+DRAIN+NOT_RESPONDING"), a trailing '*' for a node that does not
// respond ("DOWN*"), and DRAINED/DRAINING/DRAIN as bases. Case is ignored.
func parseNodeState(s string) nodeState {
	s = strings.ToUpper(strings.TrimSpace(s))
	var st uint32
	if strings.HasSuffix(s, "*") {
		st |= flagNoRespond
		s = strings.TrimSuffix(s, "*")
	}
	parts := strings.Split(s, "+")
	switch parts[0] {
	case "DRAINED", "DRAIN":
		st |= nodeBaseIdle | flagDrain
	case "DRAINING":
		st |= nodeBaseAllocated | flagDrain
	case "ALLOC":
		st |= nodeBaseAllocated
	case "MIX":
		st |= nodeBaseMixed
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
	return nodeState(st)
}

// effectiveNodeState is the state with MIXED worked out from the CPU count,
// as scontrol and sinfo do: a node using some but not all of its CPUs is
// MIXED. sinfo leaves draining nodes alone (forSinfo).
func effectiveNodeState(n api.Node, forSinfo bool) nodeState {
	st := parseNodeState(n.State)
	if forSinfo && st.has(flagDrain) {
		return st
	}
	if n.AllocCPUs > 0 && n.AllocCPUs < n.CPUs {
		st = st.withBase(nodeBaseMixed)
	}
	return st
}

// complete is node_state_string_complete: "IDLE", "DOWN+NOT_RESPONDING".
func (s nodeState) complete() string {
	name := "INVALID"
	for _, b := range nodeBaseNames {
		if b.v == s.base() {
			name = b.name
		}
	}
	for _, f := range nodeFlagNames {
		if s.has(f.v) {
			name += "+" + f.name
		}
	}
	return name
}

// stateSuffix is the mark Slurm appends to a state name for a flag:
// $ maintenance, ^ reboot issued, @ reboot requested, # powering up,
// % powering down, ~ powered down, ! power down, * not responding.
func (s nodeState) stateSuffix() (string, bool) {
	switch {
	case s.has(flagMaint):
		return "$", true
	case s.has(flagRebootIssued):
		return "^", true
	case s.has(flagRebootReq):
		return "@", true
	case s.has(flagPoweringUp):
		return "#", true
	case s.has(flagPoweringDown):
		return "%", true
	case s.has(flagPoweredDown):
		return "~", true
	case s.has(flagPowerDown):
		return "!", true
	case s.has(flagNoRespond):
		return "*", true
	}
	return "", false
}

// long is node_state_string ("IDLE", "DOWN*", "DRAINED", "ALLOCATED+"); short
// is node_state_string_compact ("IDLE", "DOWN*", "DRAIN", "ALLOC"). sinfo
// prints them in lower case.
func (s nodeState) name(compact bool) string {
	pick := func(long, short string) string {
		if compact {
			return short
		}
		return long
	}
	base := s.base()
	busy := base == nodeBaseAllocated || base == nodeBaseMixed
	if s.has(flagMaint) && !s.has(flagDrain) && !busy && base != nodeBaseDown {
		if s.has(flagNoRespond) {
			return "MAINT*"
		}
		return "MAINT"
	}
	if (s.has(flagRebootReq) || s.has(flagRebootIssued)) && !busy {
		switch {
		case s.has(flagRebootIssued):
			return pick("REBOOT^", "BOOT^")
		case s.has(flagNoRespond):
			return pick("REBOOT*", "BOOT*")
		}
		return pick("REBOOT", "BOOT")
	}
	suf, _ := s.stateSuffix()
	if s.has(flagDrain) {
		if s.has(flagCompleting) || busy {
			return pick("DRAINING", "DRNG") + suf
		}
		return pick("DRAINED", "DRAIN") + suf
	}
	if s.has(flagFail) {
		nr := ""
		if s.has(flagNoRespond) {
			nr = "*"
		}
		if s.has(flagCompleting) || base == nodeBaseAllocated {
			return pick("FAILING", "FAILG") + nr
		}
		return "FAIL" + nr
	}
	switch base {
	case nodeBaseDown:
		return "DOWN" + suf
	case nodeBaseAllocated:
		if suf == "" && s.has(flagCompleting) {
			suf = "+"
		}
		return pick("ALLOCATED", "ALLOC") + suf
	}
	if s.has(flagCompleting) {
		return pick("COMPLETING", "COMP") + suf
	}
	switch base {
	case nodeBaseIdle:
		if suf == "" {
			switch {
			case s.has(flagPerfCtrs):
				return pick("PERFCTRS", "NPC")
			case s.has(flagReserved):
				return pick("RESERVED", "RESV")
			case s.has(flagPlanned):
				return pick("PLANNED", "PLND")
			}
		}
		return "IDLE" + suf
	case nodeBaseMixed:
		if suf == "" && s.has(flagPlanned) {
			suf = "-"
		}
		return pick("MIXED", "MIX") + suf
	case nodeBaseFuture:
		return pick("FUTURE", "FUTR") + suf
	}
	if s.has(flagResume) {
		return pick("RESUME", "RESM")
	}
	if s.has(flagNoRespond) {
		return pick("UNKNOWN*", "UNK*")
	}
	return pick("UNKNOWN", "UNK")
}
