// Package spot is the SpotScheduler plugin: it prefers nodes of one capacity
// type (spot or on-demand), read from the labels EKS and Karpenter set.
package spot

import (
	"context"
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
)

// Name is the plugin name used in the KubeSchedulerConfiguration.
const Name = "SpotScheduler"

// Capacity types a node can have.
const (
	Spot     = "spot"
	OnDemand = "on-demand"
)

// capacityTypeLabels maps each label to how it spells the two types.
var capacityTypeLabels = []struct {
	key, spot, onDemand string
}{
	{"karpenter.sh/capacity-type", "spot", "on-demand"},
	{"eks.amazonaws.com/capacityType", "SPOT", "ON_DEMAND"},
}

// Args configure SpotScheduler.
type Args struct {
	// Preference is the capacity type pods go to by default: spot or on-demand.
	Preference string `json:"preference,omitempty"`
	// OptOutAnnotation on a pod overrides the preference: "false" sends the
	// pod to on-demand nodes, "true" to spot nodes.
	OptOutAnnotation string `json:"optOutAnnotation,omitempty"`
}

// DefaultArgs are the args when the KubeSchedulerConfiguration gives none.
func DefaultArgs() Args {
	return Args{Preference: Spot, OptOutAnnotation: "interference.orchestrator/spot"}
}

// Validate names the first bad arg.
func (a Args) Validate() error {
	if a.Preference != Spot && a.Preference != OnDemand {
		return fmt.Errorf("%s: args.preference: must be %q or %q, got %q", Name, Spot, OnDemand, a.Preference)
	}
	return pluginargs.QualifiedName(Name, "optOutAnnotation", a.OptOutAnnotation, "key")
}

// Plugin is SpotScheduler.
type Plugin struct {
	args   Args
	warned sync.Map
}

var _ framework.ScorePlugin = &Plugin{}

// New builds the plugin from its args (defaults for missing fields).
func New(_ context.Context, obj runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	args, err := pluginargs.Load(Name, obj, DefaultArgs())
	if err != nil {
		return nil, err
	}
	return &Plugin{args: args}, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// CapacityType reads a node's capacity type from its labels: spot,
// on-demand, or "" when no known label says.
func CapacityType(node *v1.Node) string {
	if node == nil {
		return ""
	}
	for _, label := range capacityTypeLabels {
		switch node.Labels[label.key] {
		case label.spot:
			return Spot
		case label.onDemand:
			return OnDemand
		}
	}
	return ""
}

// wanted is the capacity type this pod should go to.
func (p *Plugin) wanted(logger klog.Logger, pod *v1.Pod) string {
	value, ok := pod.Annotations[p.args.OptOutAnnotation]
	if !ok {
		return p.args.Preference
	}
	switch strings.ToLower(value) {
	case "false":
		return OnDemand
	case "true":
		return Spot
	}
	if _, seen := p.warned.LoadOrStore(pod.Namespace+"/"+pod.Name, true); !seen {
		logger.Info("Ignoring a spot annotation that is not true or false", "plugin", Name, "pod", klog.KObj(pod), "value", value)
	}
	return p.args.Preference
}

// Score: MaxNodeScore on a node of the wanted type, 0 on the other type,
// half on a node whose labels do not say.
func (p *Plugin) Score(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	switch CapacityType(nodeInfo.Node()) {
	case "":
		return framework.MaxNodeScore / 2, nil
	case p.wanted(klog.FromContext(ctx), pod):
		return framework.MaxNodeScore, nil
	default:
		return framework.MinNodeScore, nil
	}
}

// ScoreExtensions: scores are already 0..MaxNodeScore.
func (p *Plugin) ScoreExtensions() framework.ScoreExtensions { return nil }
