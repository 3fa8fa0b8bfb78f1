# A module file nested too deep is refused like a flow file, naming the call.
# MODULE-FILE: modules/deep/deep.hcl

module "deep" {
  source = "../modules/deep"
}
