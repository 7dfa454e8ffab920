// Two pages, real URLs (linkable, back and forward work): /ui/ and /ui/threads/{thread}.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

const CHANGE = "outline:navigate";

export function navigate(url: string, replace = false): void {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.dispatchEvent(new Event(CHANGE));
}

export function useLocation(): { pathname: string; search: URLSearchParams } {
  const read = () => ({
    pathname: location.pathname,
    search: new URLSearchParams(location.search),
  });
  const [where, setWhere] = useState(read);
  useEffect(() => {
    const update = () => setWhere(read());
    window.addEventListener("popstate", update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return where;
}

export const threadUrl = (thread: string): string => `/ui/threads/${encodeURIComponent(thread)}`;

/** An anchor that navigates in the page (a middle click still opens a tab). */
export function Link(props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  tabIndex?: number;
  title?: string;
}) {
  const { href, children, ...rest } = props;
  return (
    <a
      {...rest}
      href={href}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
