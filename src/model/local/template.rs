//! The model's own chat template (GGUF metadata `tokenizer.chat_template`, a Jinja template)
//! rendered with minijinja, so the prompt is laid out the way the model was trained on.
//!
//! Templates are written for Python's Jinja2 as Hugging Face's tokenizers run it: blocks trim
//! the newline after them and strip the spaces before them, and `raise_exception(msg)` aborts.
//! The same settings are used here.

use minijinja::{Environment, Error, ErrorKind, Value};

use crate::model::{Message, Role};

/// Why a chat template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the model's chat template (tokenizer.chat_template) cannot be rendered: {0}")]
pub struct TemplateError(pub String);

/// What the template is rendered with besides the conversation.
#[derive(Debug, Clone, Default)]
pub struct Specials {
    pub bos_token: String,
    pub eos_token: String,
}

/// The prompt for `system` plus `messages`, ending where the assistant's answer begins
/// (`add_generation_prompt`). Tool turns must already be text (see
/// [`TextualTools::textual_request`](crate::model::textual::TextualTools::textual_request)): a
/// tool turn that is left is rendered as a user turn.
pub fn render(
    template: &str,
    system: &str,
    messages: &[Message],
    specials: &Specials,
) -> Result<String, TemplateError> {
    let mut env = Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
        .map_err(|e| TemplateError(e.to_string()))?;
    env.set_syntax(syntax);
    env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_template("chat", template)
        .map_err(|e| TemplateError(e.to_string()))?;
    let mut turns = Vec::with_capacity(messages.len() + 1);
    if !system.trim().is_empty() {
        turns.push(turn("system", system));
    }
    for m in messages {
        let role = match m.role {
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
        };
        turns.push(turn(role, &m.content));
    }
    let tmpl = env
        .get_template("chat")
        .map_err(|e| TemplateError(e.to_string()))?;
    tmpl.render(minijinja::context! {
        messages => turns,
        add_generation_prompt => true,
        bos_token => specials.bos_token.as_str(),
        eos_token => specials.eos_token.as_str(),
    })
    .map_err(|e| TemplateError(e.to_string()))
}

fn turn(role: &str, content: &str) -> Value {
    let mut map = std::collections::BTreeMap::new();
    map.insert("role", Value::from(role));
    map.insert("content", Value::from(content));
    Value::from(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ChatML template SmolLM2-135M-Instruct ships, in its own words.
    const SMOL: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn a_chatml_template_renders_system_turns_and_the_generation_prompt() {
        let out = render(
            SMOL,
            "You plan.",
            &[
                Message::user("hi"),
                Message::assistant("hello", Vec::new()),
                Message::tool("c1", "result", false),
            ],
            &Specials::default(),
        )
        .unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nYou plan.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n\
             <|im_start|>assistant\nhello<|im_end|>\n<|im_start|>user\nresult<|im_end|>\n\
             <|im_start|>assistant\n"
        );
        // Without a system prompt the template's own default system turn appears.
        let out = render(SMOL, " ", &[Message::user("hi")], &Specials::default()).unwrap();
        assert!(
            out.starts_with("<|im_start|>system\nYou are a helpful"),
            "{out}"
        );
    }

    #[test]
    fn specials_and_raise_exception_behave_as_in_jinja2() {
        let t = "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system role') }}{% endif %}[{{ m.content }}]{% endfor %}";
        let specials = Specials {
            bos_token: "<s>".into(),
            eos_token: "</s>".into(),
        };
        assert_eq!(
            render(t, "", &[Message::user("a")], &specials).unwrap(),
            "<s>[a]"
        );
        let e = render(t, "sys", &[Message::user("a")], &specials).unwrap_err();
        assert!(e.to_string().contains("no system role"), "{e}");
        let e = render("{% if %}", "", &[], &specials).unwrap_err();
        assert!(e.to_string().contains("chat template"), "{e}");
    }
}
