// Package bench is the harness behind `faster bench …`: it renders results
// as the seed's markdown-style tables and as PNG bar charts. The scripts
// beside it (peer_*.py, run_*.sh) run the peers — torchvision, OpenCV,
// djpeg, PyTorch — on the same data in the same run as our commands.
package bench
