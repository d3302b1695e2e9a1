package spot

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
)

func nodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("eks-spot").Label("eks.amazonaws.com/capacityType", "SPOT").Obj(),
		st.MakeNode().Name("eks-od").Label("eks.amazonaws.com/capacityType", "ON_DEMAND").Obj(),
		st.MakeNode().Name("karpenter-spot").Label("karpenter.sh/capacity-type", "spot").Obj(),
		st.MakeNode().Name("karpenter-od").Label("karpenter.sh/capacity-type", "on-demand").Obj(),
		st.MakeNode().Name("unlabelled").Obj(),
		st.MakeNode().Name("odd-value").Label("karpenter.sh/capacity-type", "reserved").Obj(),
	}
}

func TestPrefersSpotByDefault(t *testing.T) {
	c := plugintest.New(t, Name, New, nil, nil, nodes())
	plugintest.CheckScores(t, c.Scores(t, st.MakePod().Name("p").Obj()), map[string]int64{
		"eks-spot": 100, "karpenter-spot": 100, "eks-od": 0, "karpenter-od": 0, "unlabelled": 50, "odd-value": 50,
	})
}

func TestPrefersOnDemandWhenAsked(t *testing.T) {
	c := plugintest.New(t, Name, New, pluginargs.Unknown(`{"preference": "on-demand"}`), nil, nodes())
	plugintest.CheckScores(t, c.Scores(t, st.MakePod().Name("p").Obj()), map[string]int64{
		"eks-spot": 0, "karpenter-spot": 0, "eks-od": 100, "karpenter-od": 100, "unlabelled": 50,
	})
}

func TestPodAnnotationOptsOut(t *testing.T) {
	c := plugintest.New(t, Name, New, nil, nil, nodes())
	optOut := st.MakePod().Name("db").Annotation("interference.orchestrator/spot", "false").Obj()
	plugintest.CheckScores(t, c.Scores(t, optOut), map[string]int64{"eks-spot": 0, "karpenter-spot": 0, "eks-od": 100, "karpenter-od": 100})
	garbled := st.MakePod().Name("x").Annotation("interference.orchestrator/spot", "maybe").Obj()
	plugintest.CheckScores(t, c.Scores(t, garbled), map[string]int64{"eks-spot": 100, "eks-od": 0})
}

func TestArgs(t *testing.T) {
	plugintest.CheckArgs(t, Name, New, map[string]string{
		`{"preference": "spot"}`:      "",
		`{"preference": "SPOT"}`:      "args.preference",
		`{"preference": ""}`:          "args.preference",
		`{"optOutAnnotation": "a b"}`: "args.optOutAnnotation",
		`{"prefer": "spot"}`:          "unknown field",
	})
}
