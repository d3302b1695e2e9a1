package gpu

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
)

const gpuResource v1.ResourceName = "nvidia.com/gpu"

func nodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("cpu-only").Capacity(map[v1.ResourceName]string{"cpu": "8"}).Obj(),
		st.MakeNode().Name("a100-40").Label("gpu.nvidia.com/memory", "40960").
			Capacity(map[v1.ResourceName]string{"cpu": "8", gpuResource: "4"}).Obj(),
		st.MakeNode().Name("a100-80").Label("gpu.nvidia.com/memory", "80Gi").
			Capacity(map[v1.ResourceName]string{"cpu": "8", gpuResource: "4"}).Obj(),
		st.MakeNode().Name("gpu-unlabelled").Capacity(map[v1.ResourceName]string{"cpu": "8", gpuResource: "1"}).Obj(),
		st.MakeNode().Name("gpu-bad-label").Label("gpu.nvidia.com/memory", "lots").
			Capacity(map[v1.ResourceName]string{"cpu": "8", gpuResource: "1"}).Obj(),
	}
}

func gpuPod() *v1.Pod {
	return st.MakePod().Name("trainer").UID("trainer").Req(map[v1.ResourceName]string{gpuResource: "1"}).Obj()
}

func cpuPod() *v1.Pod {
	return st.MakePod().Name("web").UID("web").Req(map[v1.ResourceName]string{"cpu": "1"}).Obj()
}

func TestFilterKeepsGPUPodsOnGPUNodes(t *testing.T) {
	c := plugintest.New(t, Name, New, nil, nil, nodes())
	got := c.Feasible(t, gpuPod())
	slices.Sort(got)
	want := []string{"a100-40", "a100-80", "gpu-bad-label", "gpu-unlabelled"}
	if !slices.Equal(got, want) {
		t.Fatalf("feasible %v, want %v", got, want)
	}
	if got := c.Feasible(t, cpuPod()); len(got) != len(nodes()) {
		t.Fatalf("a pod without GPUs is filtered: feasible %v", got)
	}
}

func TestScorePrefersMoreGPUMemory(t *testing.T) {
	c := plugintest.New(t, Name, New, nil, nil, nodes())
	scores := c.Scores(t, gpuPod())
	// 80Gi = 81920 MiB is the most: 100; 40960 MiB is half; no or bad label: 0.
	plugintest.CheckScores(t, scores, map[string]int64{"cpu-only": 0, "a100-40": 50, "a100-80": 100, "gpu-unlabelled": 0, "gpu-bad-label": 0})
}

func TestScoreKeepsOtherPodsOffGPUNodes(t *testing.T) {
	c := plugintest.New(t, Name, New, nil, nil, nodes())
	scores := c.Scores(t, cpuPod())
	if scores["cpu-only"] != 100 || scores["a100-80"] != 0 || scores["gpu-unlabelled"] != 0 {
		t.Fatalf("scores %v: want 100 on cpu-only, 0 on GPU nodes", scores)
	}
}

func TestAvoidanceOff(t *testing.T) {
	c := plugintest.New(t, Name, New, pluginargs.Unknown(`{"avoidGPUNodesForOtherPods": false}`), nil, nodes())
	if scores := c.Scores(t, cpuPod()); len(scores) != 0 {
		t.Fatalf("with avoidance off a pod without GPUs is not scored, got %v", scores)
	}
}

func TestNodeWithoutLabelsOrCapacity(t *testing.T) {
	bare := []*v1.Node{st.MakeNode().Name("bare").Obj()}
	c := plugintest.New(t, Name, New, nil, nil, bare)
	if got := c.Feasible(t, gpuPod()); len(got) != 0 {
		t.Fatalf("bare node feasible for a GPU pod: %v", got)
	}
	if scores := c.Scores(t, cpuPod()); scores["bare"] != 100 {
		t.Fatalf("scores %v", scores)
	}
}

func TestArgs(t *testing.T) {
	plugintest.CheckArgs(t, Name, New, map[string]string{
		`{"resourceName": "nvidia.com/gpu", "memoryLabel": "nvidia.com/gpu.memory"}`: "",
		`{"resourceName": "bad name!"}`:                                              "args.resourceName",
		`{"memoryLabel": ""}`:                                                        "args.memoryLabel",
		`{"avoidGPUNodes": true}`:                                                    "unknown field",
	})
}
