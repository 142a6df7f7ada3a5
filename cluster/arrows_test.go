package cluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The arrows of ARCHITECTURE.md: what each package of the project may
// import of the project (tests excluded). A new import of the project
// that is not here fails the test: add it here, and to ARCHITECTURE.md,
// only if the arrow still points down.
var allowedImports = map[string][]string{
	"hpc":                  {"hpc/cluster", "hpc/cluster/config", "hpc/commands", "hpc/exec"},
	"hpc/accounting":       {},
	"hpc/sched":            {},
	"hpc/exec":             {},
	"hpc/internal/words":   {},
	"hpc/cluster/api":      {},
	"hpc/cluster/hostlist": {},
	"hpc/cluster/config":   {"hpc/cluster/hostlist", "hpc/internal/words"},
	"hpc/cluster/jobspec":  {"hpc/cluster/api", "hpc/cluster/config", "hpc/internal/words"},
	"hpc/cluster/peer":     {"hpc/cluster/api", "hpc/cluster/config"},
	"hpc/cluster/acct":     {"hpc/cluster/api", "hpc/sched"},
	"hpc/cluster/openapi":  {"hpc/cluster/api", "hpc/cluster/hostlist", "hpc/cluster/jobspec"},
	"hpc/cluster/fsm": {"hpc/accounting", "hpc/cluster/acct", "hpc/cluster/api", "hpc/cluster/config",
		"hpc/cluster/hostlist", "hpc/cluster/jobspec", "hpc/sched"},
	"hpc/cluster/agent": {"hpc/cluster/api", "hpc/cluster/config", "hpc/cluster/hostlist", "hpc/cluster/jobspec",
		"hpc/cluster/peer", "hpc/exec"},
	"hpc/cluster": {"hpc/accounting", "hpc/cluster/acct", "hpc/cluster/agent", "hpc/cluster/api", "hpc/cluster/config",
		"hpc/cluster/fsm", "hpc/cluster/hostlist", "hpc/cluster/jobspec", "hpc/cluster/openapi", "hpc/cluster/peer", "hpc/exec",
		"hpc/internal/promtext", "hpc/sched", "hpc/ui"},
	"hpc/commands/format": {"hpc/cluster/api", "hpc/cluster/hostlist", "hpc/cluster/jobspec", "hpc/cluster/openapi"},
	"hpc/cluster/export":  {"hpc/cluster/api", "hpc/cluster/config", "hpc/cluster/hostlist"},
	"hpc/commands": {"hpc/cluster/api", "hpc/cluster/config", "hpc/cluster/export", "hpc/cluster/hostlist", "hpc/cluster/jobspec",
		"hpc/cluster/openapi", "hpc/commands/format", "hpc/commands/scenario", "hpc/internal/netns", "hpc/internal/words"},
	// The teaching scenarios drive a lab as its users do: the API client,
	// sbatch's option parser, the config and hostlists it reads.
	"hpc/commands/scenario":   {"hpc/cluster/api", "hpc/cluster/config", "hpc/cluster/hostlist", "hpc/cluster/jobspec"},
	"hpc/internal/testrootfs": {},
	"hpc/internal/randfill":   {},
	"hpc/internal/promtext":   {},
	"hpc/internal/faultnet":   {"hpc/internal/netns"},
	"hpc/internal/netns":      {},
	"hpc/ui":                  {},
	"hpc/e2e":                 {},
	// A bench tool: the API client, as any scripted client would use it.
	"hpc/scripts/bench/apisubmit": {"hpc/cluster/api"},
	// A bench tool standing in for many nodes in the cluster's gossip.
	"hpc/scripts/bench/simnodes": {"hpc/cluster/config", "hpc/cluster/peer"},
}

func TestImportArrows(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "bin") && path != root {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := "hpc"
		if rel != "." {
			pkg += "/" + filepath.ToSlash(rel)
		}
		allowed, known := allowedImports[pkg]
		if !known {
			t.Errorf("package %s is not in the table of arrows (ARCHITECTURE.md)", pkg)
			return nil
		}
		seen[pkg] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if (p == "hpc" || strings.HasPrefix(p, "hpc/")) && !slices.Contains(allowed, p) {
				t.Errorf("%s imports %s: an arrow ARCHITECTURE.md does not have", filepath.Join(rel, filepath.Base(path)), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range allowedImports {
		if !seen[pkg] && pkg != "hpc/e2e" {
			t.Errorf("package %s in the table has no files", pkg)
		}
	}
}

// maxFuncLines is the longest a non-test function of the project may be:
// a longer one is split into steps named for what they do.
const maxFuncLines = 150

func TestFunctionLength(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "bin") && path != root {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: %s is %d lines (at most %d)", rel, fd.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
