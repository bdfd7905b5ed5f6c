package augment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Recipe is a transform as torchvision composes it: op specs run in the
// order given, each named by torchvision's class and taking torchvision's
// keyword arguments (the JSON the Python client sends for a Compose).
// Recipe.Problems checks every op's arguments as torchvision checks them;
// the loader runs a recipe (loader.Options.Recipe), fusing the decode with
// a leading RandomResizedCrop or Resize + CenterCrop.
type Recipe []Op

// The ops a Recipe runs, by torchvision's class names.
const (
	OpRandomResizedCrop    = "RandomResizedCrop"
	OpResize               = "Resize"
	OpCenterCrop           = "CenterCrop"
	OpRandomCrop           = "RandomCrop"
	OpRandomHorizontalFlip = "RandomHorizontalFlip"
	OpRandomVerticalFlip   = "RandomVerticalFlip"
	OpColorJitter          = "ColorJitter"
	OpRandomGrayscale      = "RandomGrayscale"
	OpGrayscale            = "Grayscale"
	OpGaussianBlur         = "GaussianBlur"
	OpRandomRotation       = "RandomRotation"
	OpRandomAffine         = "RandomAffine"
	OpTrivialAugmentWide   = "TrivialAugmentWide"
	OpRandAugment          = "RandAugment"
	OpAutoAugment          = "AutoAugment"
	OpAugMix               = "AugMix"
	OpPILToTensor          = "PILToTensor"
	OpToTensor             = "ToTensor"
	OpConvertImageDtype    = "ConvertImageDtype"
	OpNormalize            = "Normalize"
	OpRandomErasing        = "RandomErasing"
)

// Op is one op of a Recipe: torchvision's class name and its keyword
// arguments by torchvision's names. An argument left out takes
// torchvision's default for that class (a null is left out). Arguments
// torchvision takes as a number or a sequence (size, degrees, fill,
// kernel_size, …) are Nums, which read either.
type Op struct {
	Op string `json:"op"`

	// Geometry: RandomResizedCrop, Resize, CenterCrop, RandomCrop.
	Size          Nums     `json:"size,omitempty"`  // int or [h, w]
	Scale         Nums     `json:"scale,omitempty"` // RandomResizedCrop's, RandomErasing's [lo, hi]; RandomAffine's [lo, hi]
	Ratio         Nums     `json:"ratio,omitempty"` // RandomResizedCrop's, RandomErasing's [lo, hi]
	Interpolation string   `json:"interpolation,omitempty"`
	Antialias     *bool    `json:"antialias,omitempty"`
	MaxSize       *int     `json:"max_size,omitempty"`
	Padding       Nums     `json:"padding,omitempty"` // RandomCrop: int, [lr, tb] or [l, t, r, b]
	PadIfNeeded   bool     `json:"pad_if_needed,omitempty"`
	Fill          Nums     `json:"fill,omitempty"`         // number or per channel (0..255)
	PaddingMode   string   `json:"padding_mode,omitempty"` // constant, edge, reflect, symmetric
	P             *float64 `json:"p,omitempty"`

	// Colour: ColorJitter (each a number or [lo, hi]), Grayscale.
	Brightness        Nums `json:"brightness,omitempty"`
	Contrast          Nums `json:"contrast,omitempty"`
	Saturation        Nums `json:"saturation,omitempty"`
	Hue               Nums `json:"hue,omitempty"`
	NumOutputChannels int  `json:"num_output_channels,omitempty"`

	// GaussianBlur.
	KernelSize Nums `json:"kernel_size,omitempty"`
	Sigma      Nums `json:"sigma,omitempty"`

	// RandomRotation, RandomAffine.
	Degrees   Nums `json:"degrees,omitempty"`
	Translate Nums `json:"translate,omitempty"`
	Shear     Nums `json:"shear,omitempty"`
	Center    Nums `json:"center,omitempty"`
	Expand    bool `json:"expand,omitempty"`

	// The policies: TrivialAugmentWide, RandAugment, AutoAugment, AugMix.
	NumOps           *int     `json:"num_ops,omitempty"`
	Magnitude        *int     `json:"magnitude,omitempty"`
	NumMagnitudeBins *int     `json:"num_magnitude_bins,omitempty"`
	Policy           string   `json:"policy,omitempty"` // imagenet, cifar10, svhn
	Severity         *int     `json:"severity,omitempty"`
	MixtureWidth     *int     `json:"mixture_width,omitempty"`
	ChainDepth       *int     `json:"chain_depth,omitempty"`
	Alpha            *float64 `json:"alpha,omitempty"`
	AllOps           *bool    `json:"all_ops,omitempty"`

	// Tensors: ConvertImageDtype, Normalize, RandomErasing.
	Dtype   string `json:"dtype,omitempty"` // float32
	Mean    Nums   `json:"mean,omitempty"`
	Std     Nums   `json:"std,omitempty"`
	Value   *Value `json:"value,omitempty"`
	Inplace bool   `json:"inplace,omitempty"`
}

// Nums is an argument torchvision takes as a number or a sequence of
// numbers: JSON reads either (a number is a one-element Nums), and null
// is nil, the argument left out.
type Nums []float64

// UnmarshalJSON reads a number, an array of numbers or null.
func (n *Nums) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var v []float64
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("want a number or an array of numbers, got %s", b)
		}
		if v == nil {
			v = []float64{}
		}
		*n = v
		return nil
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return fmt.Errorf("want a number or an array of numbers, got %s", b)
	}
	*n = Nums{x}
	return nil
}

// Value is RandomErasing's value: a number, one per channel, or "random"
// (normal noise per pixel).
type Value struct {
	Nums   Nums
	Random bool
}

// UnmarshalJSON reads a number, an array of numbers or "random".
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil || s != "random" {
			return fmt.Errorf(`want a number, an array of numbers or "random", got %s`, b)
		}
		*v = Value{Random: true}
		return nil
	}
	var n Nums
	if err := n.UnmarshalJSON(b); err != nil {
		return fmt.Errorf(`want a number, an array of numbers or "random", got %s`, b)
	}
	*v = Value{Nums: n}
	return nil
}

// MarshalJSON writes "random" or the numbers.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.Random {
		return []byte(`"random"`), nil
	}
	if len(v.Nums) == 1 {
		return json.Marshal(v.Nums[0])
	}
	return json.Marshal([]float64(v.Nums))
}

// Problem is one thing wrong with a recipe (or a spec), named by its
// field path as the user wrote it: augment[2].degrees.
type Problem struct {
	Field string
	Msg   string
}

func (p Problem) Error() string {
	if p.Field == "" {
		return p.Msg
	}
	return p.Field + ": " + p.Msg
}

// Problems is a list of Problem that is an error: every problem, one a line.
type Problems []Problem

func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Error()
	}
	return strings.Join(s, "\n")
}
