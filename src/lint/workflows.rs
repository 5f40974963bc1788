//! Workflow files (`workflow/*.yaml`): the rules of [`crate::workflow::lint`] for every file, and
//! a file that does not parse as one located problem.

use crate::problem::Problem;
use crate::project::Project;

pub fn check(project: &Project, out: &mut Vec<Problem>) {
    for loaded in crate::workflow::load_all(project) {
        match &loaded.workflow {
            Ok(wf) => out.extend(crate::workflow::lint::check(wf, &loaded.text, project)),
            Err(p) => out.push(p.clone()),
        }
    }
}
