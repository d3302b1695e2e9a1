package cyclestate

import (
	"strings"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

type data struct{ n int }

func (d *data) Clone() fwk.StateData { return d }

func TestReadReturnsWhatWriteStored(t *testing.T) {
	cycle := framework.NewCycleState()
	Write(cycle, "Test", &data{n: 7})
	got, status := Read[*data](cycle, "Test")
	if status != nil || got.n != 7 {
		t.Fatalf("Read: %v, %v; want 7", got, status)
	}
}

func TestReadWithoutWriteIsAnErrorNamingThePlugin(t *testing.T) {
	_, status := Read[*data](framework.NewCycleState(), "Test")
	if status.Code() != fwk.Error || !strings.Contains(status.Message(), "Test: reading cycle state") {
		t.Fatalf("status %v, want an error naming the plugin", status)
	}
}
