module github.com/showdown-bench/showdown/experiments/examples/gate/server

go 1.25.0
