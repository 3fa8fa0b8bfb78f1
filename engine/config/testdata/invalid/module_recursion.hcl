# A module that calls itself is reported, not loaded forever.
# MODULE-FILE: modules/self/self.hcl

module "self" {
  source = "../modules/self"
}
