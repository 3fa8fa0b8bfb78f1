level    = "file1"
replicas = 2
members  = ["b", "c"]
