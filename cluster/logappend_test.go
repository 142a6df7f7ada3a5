package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// BenchmarkLogAppend: one entry of 2 KB (a submit with sbatch's usual
// environment) appended to Raft's log store as a controller's is made
// (daemon.go: raft-boltdb, fsync on), one after another. Every entry is on
// the leader's disk and then a follower's before its submit is answered, so
// twice this is the least a commit can take on this disk, whatever hpc does
// around it. HPC_BENCH_DIR picks the file system (default: the test's
// temporary directory); scripts/bench/floors.sh runs it.
func BenchmarkLogAppend(b *testing.B) {
	dir := b.TempDir()
	if d := os.Getenv("HPC_BENCH_DIR"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "logappend-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	data := make([]byte, 2048)
	var times []time.Duration
	for i := uint64(1); b.Loop(); i++ {
		t0 := time.Now()
		if err := store.StoreLog(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data}); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2])/1e6, "median-ms")
}
