package commands

import (
	"strings"
	"testing"
)

// TestSinfoJSON: sinfo --json prints openapi/v0.0.38's nodes answer, every
// node whatever sinfo's filters say.
func TestSinfoJSON(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.nodes.Nodes[3].State, f.nodes.Nodes[3].Reason, f.nodes.Nodes[3].ReasonUser = "IDLE+DRAIN", "disk swap", "root"
	f.nodes.Nodes[3].ReasonTime = at(4, 0, 0)
	stdout, stderr, code := run(e, out, errb, "sinfo", "--json", "-p", "gpu", "-t", "idle", "-N")
	if code != 0 || stderr != "" {
		t.Fatalf("sinfo --json: %d %q", code, stderr)
	}
	if strings.HasSuffix(stdout, "\n") {
		t.Errorf("sinfo --json ends in a newline, as json-c's text does not")
	}
	m := jsonAnswer(t, stdout)
	if p := m["meta"].(map[string]any)["plugin"].(map[string]any); p["type"] != "openapi/v0.0.38" {
		t.Errorf("meta.plugin: %v", p)
	}
	if errs := m["errors"].([]any); len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
	nodes := m["nodes"].([]any)
	if len(nodes) != 4 {
		t.Fatalf("%d nodes, want 4", len(nodes))
	}
	checkFields(t, "node1", pick(t, nodes, "name", "node1"), map[string]string{
		"state": "allocated", "state_flags": "[]", "cpus": "2", "cores": "2", "sockets": "1", "threads": "1",
		"alloc_cpus": "2", "idle_cpus": "0", "real_memory": "4000", "alloc_memory": "2000",
		"partitions": `["debug"]`, "address": "127.0.1.1", "hostname": "node1", "gres": "", "reason": "",
		"reason_set_by_user": "null", "tres": "cpu=2,mem=4000M,billing=2", "tres_used": "cpu=2,mem=2000M",
		"tres_weighted": "2.0", "slurmd_version": "22.05.8", "owner": "null", "next_state_after_reboot": "invalid",
	})
	checkFields(t, "node3", pick(t, nodes, "name", "node3"), map[string]string{
		"state": "allocated", "gres": "gpu:2", "partitions": `["debug","gpu"]`,
		"tres": "cpu=2,mem=4000M,billing=2,gres/gpu=2",
	})
	checkFields(t, "node4", pick(t, nodes, "name", "node4"), map[string]string{
		"state": "idle", "state_flags": `["DRAIN"]`, "alloc_cpus": "0", "idle_cpus": "2", "tres_used": "null",
		"reason": "disk swap", "reason_set_by_user": "root", "reason_changed_at": jsonText(at(4, 0, 0).Unix()),
	})
	last, first := -1, stdout[strings.Index(stdout, "\"nodes\""):]
	for _, k := range []string{"architecture", "boards", "cores", "cpus", "gres", "name", "next_state_after_reboot",
		"address", "hostname", "state", "state_flags", "next_state_after_reboot_flags", "partitions", "real_memory",
		"reason", "tres", "alloc_memory", "alloc_cpus", "idle_cpus", "tres_used", "tres_weighted"} {
		i := strings.Index(first, "\n      \""+k+"\": ")
		if i <= last {
			t.Errorf("key %q out of order", k)
		}
		last = i
	}
}

// TestSinfoYAML: --yaml dumps the same tree as a YAML document.
func TestSinfoYAML(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.nodes.Nodes = f.nodes.Nodes[2:3]
	stdout, stderr, code := run(e, out, errb, "sinfo", "--yaml")
	if code != 0 || stderr != "" {
		t.Fatalf("sinfo --yaml: %d %q", code, stderr)
	}
	for _, want := range []string{
		"---\nmeta:\n  plugin:\n    type: openapi/v0.0.38\n", "errors: []\nnodes:\n- architecture: ",
		"  comment: null\n", "  name: node3\n", "  state: allocated\n  state_flags: []\n",
		"  partitions:\n  - debug\n  - gpu\n", "  tres_weighted: 2.000000\n...\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("sinfo --yaml lacks\n%s\nin\n%s", want, stdout)
		}
	}
}

// TestSinfoJSONNoNodes: with no node to dump the answer carries the
// plugin's error.
func TestSinfoJSONNoNodes(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.nodes.Nodes = nil
	stdout, _, code := run(e, out, errb, "sinfo", "--json")
	m := jsonAnswer(t, stdout)
	errs := m["errors"].([]any)
	if code != 0 || len(errs) != 1 || len(m["nodes"].([]any)) != 0 {
		t.Fatalf("sinfo --json without nodes: %d %s", code, stdout)
	}
	checkFields(t, "error", errs[0].(map[string]any), map[string]string{"error": "Invalid node name specified", "errno": "2018"})
}
