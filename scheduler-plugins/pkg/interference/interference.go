// Package interference is the InterferenceAware score plugin: it prefers the
// node where the pod adds the least interference to the pods already there,
// the same dot-product formula as the Python placement engine.
package interference

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"interference.orchestrator/scheduler-plugins/pkg/cyclestate"
	"interference.orchestrator/scheduler-plugins/pkg/deletions"
	"interference.orchestrator/scheduler-plugins/pkg/nodescore"
	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
)

// Name is the plugin name used in the KubeSchedulerConfiguration.
const Name = "InterferenceAware"

// Args configure InterferenceAware.
type Args struct {
	// ProfileAnnotation holds the pod's pressure profile as JSON.
	ProfileAnnotation string `json:"profileAnnotation,omitempty"`
	// TypeLabel is read when the annotation is absent: cpu or memory.
	TypeLabel string `json:"typeLabel,omitempty"`
	// Resolution is how many raw score units one unit of interference is
	// worth before NormalizeScore; it bounds the precision of the ranking.
	Resolution int64 `json:"resolution,omitempty"`
}

// DefaultArgs are the args when the KubeSchedulerConfiguration gives none.
func DefaultArgs() Args {
	return Args{
		ProfileAnnotation: "interference.orchestrator/profile",
		TypeLabel:         "interference.orchestrator/type",
		Resolution:        1000,
	}
}

// Validate names the first bad arg.
func (a Args) Validate() error {
	for field, key := range map[string]string{"profileAnnotation": a.ProfileAnnotation, "typeLabel": a.TypeLabel} {
		if err := pluginargs.QualifiedName(Name, field, key, "key"); err != nil {
			return err
		}
	}
	if a.Resolution < 1 || a.Resolution > 1_000_000 {
		return fmt.Errorf("%s: args.resolution: must be from 1 to 1000000, got %d", Name, a.Resolution)
	}
	return nil
}

// Plugin scores nodes by the interference a pod would add there.
type Plugin struct {
	args  Args
	pods  *podProfiles
	nodes *nodeCache
}

var (
	_ framework.PreScorePlugin = &Plugin{}
	_ framework.ScorePlugin    = &Plugin{}
)

// New builds the plugin from its args (defaults for missing fields). With a
// handle (in the scheduler), deleted pods and nodes leave the plugin's memos
// through the scheduler's own informers.
func New(_ context.Context, obj runtime.Object, handle framework.Handle) (framework.Plugin, error) {
	args, err := pluginargs.Load(Name, obj, DefaultArgs())
	if err != nil {
		return nil, err
	}
	p := &Plugin{args: args, pods: newPodProfiles(), nodes: &nodeCache{}}
	if err := deletions.Pods(Name, handle, func(pod *v1.Pod) { p.pods.forget(pod.UID) }); err != nil {
		return nil, err
	}
	if err := deletions.Nodes(Name, handle, func(node *v1.Node) { p.nodes.forget(node.Name) }); err != nil {
		return nil, err
	}
	return p, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

type state struct{ profile Profile }

func (s *state) Clone() fwk.StateData { return s }

// PreScore reads the pod's profile once per cycle. A pod without a profile,
// or with a malformed one, skips Score: every node is equal to this plugin.
func (p *Plugin) PreScore(ctx context.Context, cycle fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	profile, ok := p.profileOf(klog.FromContext(ctx), pod)
	if !ok || profile == (Profile{}) {
		return fwk.NewStatus(fwk.Skip)
	}
	cyclestate.Write(cycle, Name, &state{profile: profile})
	return nil
}

// Score returns the added interference in raw units (Resolution per unit);
// NormalizeScore turns lower interference into a higher score. The added
// interference is the dot product of the pod's profile with the sum of the
// profiles on the node (dot is linear), the sum kept per node generation.
func (p *Plugin) Score(ctx context.Context, cycle fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, status := cyclestate.Read[*state](cycle, Name)
	if status != nil {
		return 0, status
	}
	profile := s.profile
	// NodeInfo includes pods the scheduler has assumed but not yet bound, so
	// a burst sees the pods placed just before it.
	sums := p.sumsOf(klog.FromContext(ctx), nodeInfo)
	added := Dot(profile, sums.sum)
	if len(sums.members) > 0 {
		if own, onNode := sums.members[pod.UID]; onNode {
			added -= Dot(profile, own)
		}
	}
	return int64(math.Round(added * float64(p.args.Resolution))), nil
}

// ScoreExtensions returns the plugin itself for NormalizeScore.
func (p *Plugin) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore maps the least added interference to MaxNodeScore and the
// most to 0.
func (p *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *fwk.Status {
	nodescore.InvertMinMax(scores)
	return nil
}
