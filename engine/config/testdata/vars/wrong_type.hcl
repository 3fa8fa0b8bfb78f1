replicas = "three"  # ERROR: Invalid value for variable # ERROR: The value given for "replicas" does not match its type
members  = ["a", "b"]
membres  = ["c"]    # ERROR: Undeclared variable # ERROR: The flow declares no variable "membres". Did you mean "members"?
