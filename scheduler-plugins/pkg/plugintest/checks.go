package plugintest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
)

// CheckScores reports every node of want whose score in got differs.
func CheckScores(t testing.TB, got, want map[string]int64) {
	t.Helper()
	for name, score := range want {
		if got[name] != score {
			t.Errorf("%s: %d, want %d (all: %v)", name, got[name], score, got)
		}
	}
}

// CheckArgs builds the plugin from each raw JSON args of cases: the value ""
// means the args are accepted; any other value is a part of the error that
// must stop the plugin, which must also name the plugin.
func CheckArgs(t *testing.T, plugin string, factory frameworkruntime.PluginFactory, cases map[string]string) {
	t.Helper()
	for raw, want := range cases {
		_, err := factory(context.Background(), pluginargs.Unknown(raw), nil)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", raw, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), plugin) {
			t.Errorf("%s: error %v, want one naming %s and %q", raw, err, plugin, want)
		}
	}
}

// LoadCases reads the cases of a fixture the Go and the Python tests share,
// tests/fixtures/<name> of the repository (the folder above the module's
// go.mod): a JSON object whose "cases" are decoded into C. No cases fails the
// test.
func LoadCases[C any](t testing.TB, name string) []C {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "..", "tests", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []C `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("no cases in the fixture")
	}
	return file.Cases
}

// moduleRoot is the folder of the go.mod above the test's working directory
// (go test runs a test in its package's folder).
func moduleRoot() (string, error) {
	start, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := start; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or above it", start)
		}
		dir = parent
	}
}
