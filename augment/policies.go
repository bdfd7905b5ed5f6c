package augment

// AutoAugmentPolicy names the policy of AutoAugment (torchvision's
// AutoAugmentPolicy): the zero value is IMAGENET.
type AutoAugmentPolicy uint8

const (
	PolicyImageNet AutoAugmentPolicy = iota
	PolicyCIFAR10
	PolicySVHN
)

// subPolicies is the policy's list of sub-policies.
func (p AutoAugmentPolicy) subPolicies() [][2]policyOp {
	switch p {
	case PolicyCIFAR10:
		return CIFAR10Policy[:]
	case PolicySVHN:
		return SVHNPolicy[:]
	}
	return ImageNetPolicy[:]
}

// CIFAR10Policy is AutoAugment's cifar10 policy as torchvision 0.14 lists it.
var CIFAR10Policy = [25][2]policyOp{
	{{OpInvert, 0.1, -1}, {OpContrast, 0.2, 6}},
	{{OpRotate, 0.7, 2}, {OpTranslateX, 0.3, 9}},
	{{OpSharpness, 0.8, 1}, {OpSharpness, 0.9, 3}},
	{{OpShearY, 0.5, 8}, {OpTranslateY, 0.7, 9}},
	{{OpAutoContrast, 0.5, -1}, {OpEqualize, 0.9, -1}},
	{{OpShearY, 0.2, 7}, {OpPosterize, 0.3, 7}},
	{{OpColor, 0.4, 3}, {OpBrightness, 0.6, 7}},
	{{OpSharpness, 0.3, 9}, {OpBrightness, 0.7, 9}},
	{{OpEqualize, 0.6, -1}, {OpEqualize, 0.5, -1}},
	{{OpContrast, 0.6, 7}, {OpSharpness, 0.6, 5}},
	{{OpColor, 0.7, 7}, {OpTranslateX, 0.5, 8}},
	{{OpEqualize, 0.3, -1}, {OpAutoContrast, 0.4, -1}},
	{{OpTranslateY, 0.4, 3}, {OpSharpness, 0.2, 6}},
	{{OpBrightness, 0.9, 6}, {OpColor, 0.2, 8}},
	{{OpSolarize, 0.5, 2}, {OpInvert, 0.0, -1}},
	{{OpEqualize, 0.2, -1}, {OpAutoContrast, 0.6, -1}},
	{{OpEqualize, 0.2, -1}, {OpEqualize, 0.6, -1}},
	{{OpColor, 0.9, 9}, {OpEqualize, 0.6, -1}},
	{{OpAutoContrast, 0.8, -1}, {OpSolarize, 0.2, 8}},
	{{OpBrightness, 0.1, 3}, {OpColor, 0.7, 0}},
	{{OpSolarize, 0.4, 5}, {OpAutoContrast, 0.9, -1}},
	{{OpTranslateY, 0.9, 9}, {OpTranslateY, 0.7, 9}},
	{{OpAutoContrast, 0.9, -1}, {OpSolarize, 0.8, 3}},
	{{OpEqualize, 0.8, -1}, {OpInvert, 0.1, -1}},
	{{OpTranslateY, 0.7, 9}, {OpAutoContrast, 0.9, -1}},
}

// SVHNPolicy is AutoAugment's svhn policy as torchvision 0.14 lists it.
var SVHNPolicy = [25][2]policyOp{
	{{OpShearX, 0.9, 4}, {OpInvert, 0.2, -1}},
	{{OpShearY, 0.9, 8}, {OpInvert, 0.7, -1}},
	{{OpEqualize, 0.6, -1}, {OpSolarize, 0.6, 6}},
	{{OpInvert, 0.9, -1}, {OpEqualize, 0.6, -1}},
	{{OpEqualize, 0.6, -1}, {OpRotate, 0.9, 3}},
	{{OpShearX, 0.9, 4}, {OpAutoContrast, 0.8, -1}},
	{{OpShearY, 0.9, 8}, {OpInvert, 0.4, -1}},
	{{OpShearY, 0.9, 5}, {OpSolarize, 0.2, 6}},
	{{OpInvert, 0.9, -1}, {OpAutoContrast, 0.8, -1}},
	{{OpEqualize, 0.6, -1}, {OpRotate, 0.9, 3}},
	{{OpShearX, 0.9, 4}, {OpSolarize, 0.3, 3}},
	{{OpShearY, 0.8, 8}, {OpInvert, 0.7, -1}},
	{{OpEqualize, 0.9, -1}, {OpTranslateY, 0.6, 6}},
	{{OpInvert, 0.9, -1}, {OpEqualize, 0.6, -1}},
	{{OpContrast, 0.3, 3}, {OpRotate, 0.8, 4}},
	{{OpInvert, 0.8, -1}, {OpTranslateY, 0.0, 2}},
	{{OpShearY, 0.7, 6}, {OpSolarize, 0.4, 8}},
	{{OpInvert, 0.6, -1}, {OpRotate, 0.8, 4}},
	{{OpShearY, 0.3, 7}, {OpTranslateX, 0.9, 3}},
	{{OpShearX, 0.1, 6}, {OpInvert, 0.6, -1}},
	{{OpSolarize, 0.7, 2}, {OpTranslateY, 0.6, 7}},
	{{OpShearY, 0.8, 4}, {OpInvert, 0.8, -1}},
	{{OpShearX, 0.7, 9}, {OpTranslateY, 0.8, 3}},
	{{OpShearY, 0.8, 5}, {OpAutoContrast, 0.7, -1}},
	{{OpShearX, 0.7, 2}, {OpInvert, 0.1, -1}},
}
