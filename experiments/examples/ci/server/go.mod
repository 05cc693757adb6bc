module example.com/showdown-ci-example/server

go 1.25.0
