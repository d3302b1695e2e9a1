// Package pluginargs decodes the `args` of a pluginConfig entry strictly, so a
// misspelt field stops the scheduler at start instead of being ignored, and
// checks them with the plugin's own Validate.
package pluginargs

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Validator is a plugin's args type: Validate names the first bad field.
type Validator interface {
	Validate() error
}

// Load is what every plugin's New does with its args: decode obj over the
// plugin's defaults (Decode), then Validate. Errors name the plugin.
func Load[A Validator](plugin string, obj runtime.Object, defaults A) (A, error) {
	args := defaults
	if err := Decode(plugin, obj, &args); err != nil {
		var zero A
		return zero, err
	}
	if err := args.Validate(); err != nil {
		var zero A
		return zero, err
	}
	return args, nil
}

// Decode fills `into` from the plugin's args. Out-of-tree args reach the
// plugin as *runtime.Unknown (JSON or YAML bytes); nil means no pluginConfig
// entry, and `into` keeps its defaults. Unknown fields are an error naming
// the plugin.
func Decode(plugin string, obj runtime.Object, into interface{}) error {
	if obj == nil {
		return nil
	}
	unknown, ok := obj.(*runtime.Unknown)
	if !ok {
		return fmt.Errorf("%s: want args of type runtime.Unknown, got %T", plugin, obj)
	}
	if len(unknown.Raw) == 0 {
		return nil
	}
	if err := yaml.UnmarshalStrict(unknown.Raw, into); err != nil {
		return fmt.Errorf("%s: args: %w", plugin, err)
	}
	return nil
}

// QualifiedName checks an arg that must be a qualified name (a label or
// annotation key, an extended resource name): the error names the plugin
// and the field, `<plugin>: args.<field>: "<value>" is not a valid <what>`.
func QualifiedName(plugin, field, value, what string) error {
	if errs := validation.IsQualifiedName(value); len(errs) > 0 {
		return fmt.Errorf("%s: args.%s: %q is not a valid %s: %v", plugin, field, value, what, errs)
	}
	return nil
}

// Unknown wraps raw JSON as the framework hands args to a plugin (tests).
func Unknown(raw string) runtime.Object {
	return &runtime.Unknown{Raw: []byte(raw), ContentType: runtime.ContentTypeJSON}
}
