//! Parsing a page into a tree with a bound on its nesting.
//!
//! html5ever builds the tree without recursion, but each start tag searches its stack of open
//! elements, so a page of 100,000 nested elements takes quadratic time. [`parse`] feeds the
//! page in chunks to a sink that measures every node it attaches (through the parents, at most
//! the limit deep) and stops at the first chunk that went past the limit. The tree that comes
//! back is measured once more, whole and without recursion, because the tree builder also moves
//! existing subtrees.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::{Attribute, ExpandedName, ParseOpts, QualName, parse_document};
use markup5ever_rcdom::{Handle, Node, NodeData, RcDom};

/// The page is fed to the parser in pieces of about this many bytes.
const CHUNK_BYTES: usize = 16 * 1024;

/// Parses `html`; `None` when some element lies more than `limit` levels deep.
pub(super) fn parse(html: &str, limit: usize) -> Option<Handle> {
    let too_deep = Rc::new(Cell::new(false));
    let sink = BoundedDom {
        dom: RcDom::default(),
        limit,
        too_deep: too_deep.clone(),
        templates: RefCell::new(HashMap::new()),
    };
    let opts = ParseOpts {
        tree_builder: TreeBuilderOpts {
            scripting_enabled: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut parser = parse_document(sink, opts);
    for chunk in chunks(html) {
        parser.process(StrTendril::from_slice(chunk));
        if too_deep.get() {
            return None;
        }
    }
    let dom = parser.finish();
    (!too_deep.get() && !deeper_than(&dom.document, limit)).then_some(dom.document)
}

/// `text` in pieces of about [`CHUNK_BYTES`], cut at character boundaries.
fn chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len().min(CHUNK_BYTES);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        Some(chunk)
    })
}

/// Whether any node of `tree` (template contents included) lies more than `limit` levels below
/// it, found without recursion.
pub(super) fn deeper_than(tree: &Handle, limit: usize) -> bool {
    let mut pending = vec![(tree.clone(), 0usize)];
    while let Some((node, depth)) = pending.pop() {
        if depth > limit {
            return true;
        }
        for child in node.children.borrow().iter() {
            pending.push((child.clone(), depth + 1));
        }
        if let NodeData::Element {
            template_contents, ..
        } = &node.data
            && let Some(contents) = template_contents.borrow().as_ref()
        {
            pending.push((contents.clone(), depth + 1));
        }
    }
    false
}

/// An [`RcDom`] that notes when a node is attached more than `limit` levels deep.
struct BoundedDom {
    dom: RcDom,
    limit: usize,
    too_deep: Rc<Cell<bool>>,
    /// Each template's contents (a document of its own, with no parent) and its template, so a
    /// node inside counts the levels above the template too.
    templates: RefCell<HashMap<*const Node, Weak<Node>>>,
}

impl BoundedDom {
    /// The levels above `node`, counted up to one past the limit.
    fn depth(&self, node: &Handle) -> usize {
        let mut depth = 0;
        let mut current = node.clone();
        while depth <= self.limit {
            let parent = current.parent.take();
            current.parent.set(parent.clone());
            let above = parent.and_then(|parent| parent.upgrade()).or_else(|| {
                let templates = self.templates.borrow();
                templates.get(&Rc::as_ptr(&current)).and_then(Weak::upgrade)
            });
            match above {
                Some(above) => {
                    depth += 1;
                    current = above;
                }
                None => break,
            }
        }
        depth
    }

    /// Notes when a child of `parent` lies past the limit.
    fn check_child_of(&self, parent: &Handle) {
        if !self.too_deep.get() && self.depth(parent) >= self.limit {
            self.too_deep.set(true);
        }
    }
}

impl TreeSink for BoundedDom {
    type Handle = Handle;
    type Output = RcDom;
    type ElemName<'a>
        = ExpandedName<'a>
    where
        Self: 'a;

    fn finish(self) -> RcDom {
        self.dom
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> ExpandedName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        let template = flags.template;
        let element = self.dom.create_element(name, attrs, flags);
        if template {
            let contents = self.dom.get_template_contents(&element);
            self.templates
                .borrow_mut()
                .insert(Rc::as_ptr(&contents), Rc::downgrade(&element));
        }
        element
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.dom.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        self.check_child_of(parent);
        self.dom.append(parent, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        self.check_child_of(element);
        self.check_child_of(prev_element);
        self.dom
            .append_based_on_parent_node(element, prev_element, child);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.dom
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.dom.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.dom.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        // The new node becomes the sibling's sibling: as deep as the sibling.
        let depth = self.depth(sibling);
        if depth > self.limit {
            self.too_deep.set(true);
        }
        self.dom.append_before_sibling(sibling, new_node);
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.check_child_of(new_parent);
        self.dom.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.dom.is_mathml_annotation_xml_integration_point(handle)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &Handle) {
        self.dom.maybe_clone_an_option_into_selectedcontent(option);
    }
}
