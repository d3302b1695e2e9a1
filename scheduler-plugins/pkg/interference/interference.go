// Package interference is the InterferenceAware score plugin: it prefers the
// node where the pod adds the least interference to the pods already there,
// the same dot-product formula as the Python placement engine.
package interference

import (
	"context"
	"fmt"
	"math"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"interference.orchestrator/scheduler-plugins/pkg/nodescore"
	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
)

// Name is the plugin name used in the KubeSchedulerConfiguration.
const Name = "InterferenceAware"

const stateKey fwk.StateKey = Name

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
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return fmt.Errorf("%s: args.%s: %q is not a valid key: %v", Name, field, key, errs)
		}
	}
	if a.Resolution < 1 || a.Resolution > 1_000_000 {
		return fmt.Errorf("%s: args.resolution: must be from 1 to 1000000, got %d", Name, a.Resolution)
	}
	return nil
}

// Plugin scores nodes by the interference a pod would add there.
type Plugin struct {
	args   Args
	cache  *annotationCache
	warned sync.Map // pod keys whose bad profile was logged
}

var (
	_ framework.PreScorePlugin = &Plugin{}
	_ framework.ScorePlugin    = &Plugin{}
)

// New builds the plugin from its args (defaults for missing fields).
func New(_ context.Context, obj runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	args := DefaultArgs()
	if err := pluginargs.Decode(Name, obj, &args); err != nil {
		return nil, err
	}
	if err := args.Validate(); err != nil {
		return nil, err
	}
	return &Plugin{args: args, cache: newAnnotationCache()}, nil
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
	cycle.Write(stateKey, &state{profile: profile})
	return nil
}

// Score returns the added interference in raw units (Resolution per unit);
// NormalizeScore turns lower interference into a higher score.
func (p *Plugin) Score(ctx context.Context, cycle fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	data, err := cycle.Read(stateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("%s: reading cycle state: %w", Name, err))
	}
	profile := data.(*state).profile
	logger := klog.FromContext(ctx)
	var added float64
	// GetPods includes pods the scheduler has assumed but not yet bound, so a
	// burst sees the pods placed just before it.
	for _, info := range nodeInfo.GetPods() {
		other := info.GetPod()
		if other.UID == pod.UID {
			continue
		}
		otherProfile, ok := p.profileOf(logger, other)
		if !ok {
			continue
		}
		added += Dot(profile, otherProfile)
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

// profileOf returns the pod's profile, logging a bad one once per pod.
func (p *Plugin) profileOf(logger klog.Logger, pod *v1.Pod) (Profile, bool) {
	profile, source, err := podProfile(pod, p.args.ProfileAnnotation, p.args.TypeLabel, p.cache)
	if err != nil {
		key := pod.Namespace + "/" + pod.Name
		if _, seen := p.warned.LoadOrStore(key, true); !seen {
			where := p.args.ProfileAnnotation
			if source == sourceTypeLabel {
				where = p.args.TypeLabel
			}
			logger.Info("Ignoring a bad interference profile: the pod counts as neutral", "plugin", Name, "pod", klog.KObj(pod), "key", where, "err", err)
		}
		return Profile{}, false
	}
	return profile, source != sourceNone
}
