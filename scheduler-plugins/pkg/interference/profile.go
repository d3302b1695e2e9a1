package interference

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Dimensions are the resources of a pressure profile, in the order of
// PRESSURE_DIMENSIONS in plugins/module_utils/interference.py.
var Dimensions = [...]string{"cpu", "memory_bandwidth", "llc", "disk_io", "network_io"}

// Profile is a pressure vector over Dimensions, each entry in [0, 1]
// (1 = saturates that resource of a node).
type Profile [len(Dimensions)]float64

// typeProfiles is the seed vocabulary of the type label: one-hot profiles.
var typeProfiles = map[string]Profile{
	"cpu":    {1, 0, 0, 0, 0},
	"memory": {0, 1, 0, 0, 0},
}

// Dot is the interference of two profiles placed together (no unit), the
// same formula as interference.dot in the Python engine.
func Dot(a, b Profile) float64 {
	var sum float64
	for i := range a {
		sum += a[i] * b[i]
	}
	return sum
}

// AddedInterference is what placing a pod with profile `pod` next to
// `others` adds to the node's interference: the sum of its dot products with
// each of them (interference.node_interference(others + [pod]) minus
// node_interference(others) in the Python engine).
func AddedInterference(pod Profile, others []Profile) float64 {
	var sum float64
	for _, o := range others {
		sum += Dot(pod, o)
	}
	return sum
}

// CrossNodeInterference is what placing a pod with profile `pod` on a node
// adds through `others`, the pods on the other nodes of the node's group (one
// host): the sum over them of sum_r shares_r pod_r other_r, where shares are
// the sharing option's shares in Dimensions order (sharing_score in
// plugins/module_utils/sharing.py, for one pod). Pods on nodes of other
// groups, or on any other node when the node has no group, add nothing and
// are not passed.
func CrossNodeInterference(pod, shares Profile, others []Profile) float64 {
	var weighted Profile
	for i := range pod {
		weighted[i] = shares[i] * pod[i]
	}
	return AddedInterference(weighted, others)
}

// ParseAnnotation reads a profile annotation: a JSON object mapping a subset
// of Dimensions to numbers in [0, 1]. The empty object is the profile that
// presses on nothing (what the apps role writes for an all-zero profile).
func ParseAnnotation(value string) (Profile, error) {
	var raw map[string]any
	decoder := json.NewDecoder(bytes.NewReader([]byte(value)))
	decoder.UseNumber()
	if err := decoder.Decode(&raw); err != nil {
		return Profile{}, fmt.Errorf("not a JSON object of resource to pressure: %w", err)
	}
	if decoder.More() {
		return Profile{}, fmt.Errorf("trailing data after the JSON object")
	}
	var profile Profile
	for key, entry := range raw {
		index := dimensionIndex(key)
		if index < 0 {
			return Profile{}, fmt.Errorf("unknown resource %q: expected one of %s", key, strings.Join(Dimensions[:], ", "))
		}
		// UseNumber keeps JSON numbers apart from strings such as "0.5".
		number, isNumber := entry.(json.Number)
		if !isNumber {
			return Profile{}, fmt.Errorf("%s: must be a number from 0 to 1, got %v", key, entry)
		}
		pressure, err := number.Float64()
		if err != nil || pressure < 0 || pressure > 1 {
			return Profile{}, fmt.Errorf("%s: must be a number from 0 to 1, got %s", key, number)
		}
		profile[index] = pressure
	}
	return profile, nil
}

func dimensionIndex(name string) int {
	for i, d := range Dimensions {
		if d == name {
			return i
		}
	}
	return -1
}

// MaxAnnotationBytes bounds the profile annotation that is parsed, as
// MAX_PROFILE_ANNOTATION_CHARS in plugins/module_utils/contract.py does for
// the Python side: anyone who may create a pod writes it, and a longer text
// is not a profile (five numbers need well under a hundred bytes).
const MaxAnnotationBytes = 1024

// podProfile returns a pod's profile from its annotation and label values,
// as plugins/module_utils/contract.py's pod_profile reads it: a valid
// annotation, else the one-hot profile of the type label, else none (ok
// false: the pod is neutral). problem describes a malformed or oversized
// annotation or an unknown type, for the log; the pod then counts as if
// that value were absent.
func podProfile(annotation string, hasAnnotation bool, label string, hasLabel bool) (profile Profile, ok bool, problem error) {
	if hasAnnotation {
		var err error
		if len(annotation) > MaxAnnotationBytes {
			err = fmt.Errorf("%d bytes, more than the %d a profile may have", len(annotation), MaxAnnotationBytes)
		} else {
			profile, err = ParseAnnotation(annotation)
		}
		if err == nil {
			return profile, true, nil
		}
		problem = fmt.Errorf("annotation: %w", err)
	}
	if !hasLabel {
		return Profile{}, false, problem
	}
	profile, known := typeProfiles[strings.ToLower(label)]
	if known {
		return profile, true, problem
	}
	if problem == nil && strings.EqualFold(label, customType) {
		// A profile-only app's label: its annotation is the profile.
		return Profile{}, false, nil
	}
	return Profile{}, false, errors.Join(problem, fmt.Errorf("type label: unknown type %q: expected cpu or memory", label))
}

// customType is the type label of an app given by a profile only
// (CUSTOM_TYPE in plugins/module_utils/contract.py).
const customType = "custom"

// CPUDemandAnnotation holds a pod's CPU demand, the CPU it would use if it
// had it, as whole millicores (`1500m`): CPU_DEMAND_ANNOTATION in
// plugins/module_utils/contract.py, what CPU time-sharing counts.
const CPUDemandAnnotation = "interference.orchestrator/cpu-demand"

// maxDemandDigits is the most digits a demand may have (a million cores).
const maxDemandDigits = 9

// ParseCPUDemand reads a CPUDemandAnnotation value as contract.py's
// pod_cpu_demand does: 1 to 9 ASCII digits followed by `m`, the demand in
// millicores; any other value ("", "1", "1.5", "1500M", "-1m") is 0, no
// demand, never an error.
func ParseCPUDemand(value string) int64 {
	digits, ok := strings.CutSuffix(value, "m")
	if !ok || len(digits) == 0 || len(digits) > maxDemandDigits {
		return 0
	}
	var demand int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0
		}
		demand = demand*10 + int64(c-'0')
	}
	return demand
}
